package zed

import (
	"testing"

	"github.com/joulehook/joule/plugins/hook/hooktest"
)

func TestInstall(t *testing.T) {
	hooktest.AgentServers(t, Installer{}, ".config/zed/settings.json", Agent, []hooktest.AgentServerCase{
		{Name: "fresh"},
		{Name: "keeps the user's agents", Existing: `{"theme":"One Dark","agent_servers":{"Claude":{"command":"claude-agent-acp", "type": "custom"}}}`, Keep: "Claude"},
		{Name: "not an object", Existing: `{"agent_servers":[]}`, Err: true},
	})
}

// TestInstallMatchesZedSchema: what joule install zed writes is an entry
// Zed's settings read (testdata/agent_servers.schema.json, from Zed's own
// serde types; see testdata/SOURCE.md), beside the user's own agents.
func TestInstallMatchesZedSchema(t *testing.T) {
	hooktest.AgentServerSchema(t, Installer{}, ".config/zed/settings.json", Agent,
		`{"theme":"One Dark","agent_servers":{"Claude":{"type":"registry"},"mine":{"type":"custom","command":"my-agent","args":["--acp"]}}}`,
		"testdata/agent_servers.schema.json", "")
}
