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
