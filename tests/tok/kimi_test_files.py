"""Where the tok Python tests find their inputs: the source tree, the built
tools (K3_BIN_DIR under ctest, build/release/bin otherwise), the real Kimi
vocabulary committed in tests/data/kimi (provenance in SOURCE.md there), and
scripts/ on sys.path for the Python references (xtml_ref and friends).
Not a test itself: tests/CMakeLists.txt registers only *_test.py."""
import os
import sys

SOURCE = os.environ.get("K3_SOURCE_DIR", os.path.join(os.path.dirname(os.path.abspath(__file__)), "../.."))
KIMI = os.path.join(SOURCE, "tests/data/kimi")
BIN = os.environ.get("K3_BIN_DIR", os.path.join(SOURCE, "build/release/bin"))
MODEL = os.path.join(KIMI, "tiktoken.model")
CONFIG = os.path.join(KIMI, "k3_added_tokens.reconstructed.json")
sys.path.insert(0, os.path.join(SOURCE, "scripts"))
