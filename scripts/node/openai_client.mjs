// The official OpenAI client for the server tests (tests/serve), resolved from
// this package's node_modules.
export { default as OpenAI, APIError } from "openai";
