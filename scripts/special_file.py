"""Put a special or hostile file where a regular one was: the inputs the
tools must refuse cleanly (hostile-input tests, corrupt_long.py)."""
import os


def replace_file(path, how):
    """how: fifo | devzero (a symlink to /dev/zero) | dir | empty | sparse:N
    (a sparse file of N bytes, beyond the tools' size caps at no disk cost)."""
    if os.path.lexists(path):
        os.remove(path)
    if how == "fifo":
        os.mkfifo(path)
    elif how == "devzero":
        os.symlink("/dev/zero", path)
    elif how == "dir":
        os.mkdir(path)
    elif how == "empty":
        open(path, "wb").close()
    elif how.startswith("sparse:"):
        with open(path, "wb") as f:
            f.truncate(int(how[7:]))
    else:
        raise SystemExit(f"unknown replacement {how}")
