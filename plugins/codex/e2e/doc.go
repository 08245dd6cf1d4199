// Package e2e runs the real Codex CLI (the pinned @openai/codex in
// testdata, installed by .ci/setup.d/11-codex.sh) headless and offline
// against a fake OpenAI Responses endpoint of its own on 127.0.0.1, with
// joule installed by `joule install codex` as a user would install it.
// Where the machine allows it (root with unshare), the whole test process
// runs in a network namespace that has only loopback.
package e2e
