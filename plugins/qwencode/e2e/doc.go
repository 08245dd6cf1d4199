// Package e2e runs the real Qwen Code CLI (the npm package pinned in
// package.json, installed by .ci/setup.d/12-qwen-code.sh) offline against
// a fake OpenAI-compatible API on 127.0.0.1, with joule installed by joule
// install, in a loopback-only network namespace where the machine allows
// one. It holds tests only.
package e2e
