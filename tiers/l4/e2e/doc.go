// Package e2e runs joule acp's L4 tier against the real remote agents from
// npm: Claude Code through @zed-industries/claude-code-acp, and Codex
// through @zed-industries/codex-acp, each offline against a fake model
// endpoint of the test's own on 127.0.0.1, its model calls metered by a
// real joule proxy. The adapters are pinned in testdata/package.json and
// installed by .ci/setup.d/60-l4-remotes.sh.
package e2e
