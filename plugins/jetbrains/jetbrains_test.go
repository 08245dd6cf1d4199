package jetbrains

import (
	"testing"

	"github.com/joulehook/joule/plugins/hook/hooktest"
)

func TestInstall(t *testing.T) {
	hooktest.AgentServers(t, Installer{}, ".jetbrains/acp.json", Agent, []hooktest.AgentServerCase{
		{Name: "fresh"},
		{Name: "keeps the user's agents", Existing: `{"theme":"One Dark","agent_servers":{"Claude":{"command":"claude-agent-acp"}}}`, Keep: "Claude"},
		{Name: "not an object", Existing: `{"agent_servers":[]}`, Err: true},
	})
}

// TestInstallMatchesJetBrainsDocs: what joule install jetbrains writes is
// the acp.json format JetBrains documents (testdata/acp.schema.json; see
// testdata/SOURCE.md), and joule's entry has exactly its fields.
func TestInstallMatchesJetBrainsDocs(t *testing.T) {
	hooktest.AgentServerSchema(t, Installer{}, ".jetbrains/acp.json", Agent,
		`{"agent_servers":{"Example Agent":{"command":"/path/to/agent","args":["acp"],"env":{"API_KEY":"k"},"use_idea_mcp":false}}}`,
		"testdata/acp.schema.json", "documentedAgent")
}
