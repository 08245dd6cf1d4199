// Package e2e runs the real Claude Code CLI (the pinned one in
// node_modules, installed by .ci/setup.d/10-hosts.sh) offline against joule
// installed system-wide, in its managed settings. The user-scope and
// project tests of the same CLI are in cmd/joule (install_claude_test.go).
package e2e
