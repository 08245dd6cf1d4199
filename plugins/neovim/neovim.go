// Package neovim registers joule acp with Neovim's ACP clients: a Lua module
// holding a CodeCompanion.nvim adapter and an avante.nvim provider, which
// the user's config requires.
package neovim

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/joulehook/joule/plugins/hook"
)

// Host is the name of joule install neovim.
const Host = "neovim"

// ModulePath is where the Lua module goes: require("joule_acp").
func ModulePath(s hook.Scope) string {
	return filepath.Join(s.Home, ".config", "nvim", "lua", "joule_acp.lua")
}

// Module renders the Lua module for the joule binary at joule.
func Module(joule string) []byte {
	q := strconv.Quote(joule) // a Go quoted string is a valid Lua string for paths
	return []byte(`-- Written by 'joule install neovim'. joule acp as an ACP agent for
-- CodeCompanion.nvim and avante.nvim. In your config:
--
--   CodeCompanion: require("codecompanion").setup({
--     adapters = { acp = { joule = require("joule_acp").codecompanion } },
--     interactions = { chat = { adapter = "joule" } },
--   })
--   avante.nvim:   require("avante").setup({
--     provider = "joule",
--     acp_providers = { joule = require("joule_acp").avante },
--   })
local M = {}

M.command = ` + q + `

-- A custom ACP adapter as CodeCompanion documents one ("Creating Custom
-- ACP Adapters"). joule advertises no authentication method.
M.codecompanion = function()
  local helpers = require("codecompanion.adapters.acp.helpers")
  return {
    name = "joule",
    formatted_name = "joule",
    type = "acp",
    roles = {
      llm = "assistant",
      user = "user",
    },
    commands = {
      default = { M.command, "acp" },
    },
    defaults = {
      mcpServers = {},
      timeout = 20000,
    },
    parameters = {
      protocolVersion = 1,
      clientCapabilities = {
        fs = { readTextFile = true, writeTextFile = true },
      },
      clientInfo = {
        name = "CodeCompanion.nvim",
        version = "1.0.0",
      },
    },
    handlers = {
      setup = function(self)
        return true
      end,
      auth = function(self)
        return true
      end,
      form_messages = function(self, messages, capabilities)
        return helpers.form_messages(self, messages, capabilities)
      end,
      on_exit = function(self, code) end,
    },
  }
end

-- An avante.nvim ACP provider (AvanteACPProvider: command, args, env).
M.avante = { command = M.command, args = { "acp" }, env = {} }

return M
`)
}

// Installer writes the Lua module.
type Installer struct{}

var _ hook.Installer = Installer{}

// Plan implements hook.Installer. The module is per user whatever the scope.
func (Installer) Plan(s hook.Scope, uninstall bool) ([]hook.Change, error) {
	p := ModulePath(s)
	before, err := os.ReadFile(p)
	if err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	if before != nil && !bytes.HasPrefix(before, []byte("-- Written by 'joule install neovim'")) {
		return nil, fmt.Errorf("%s exists and was not written by joule; move it away first", p)
	}
	c := hook.Change{Path: p, Before: before, After: Module(s.Joule), Mode: 0o644}
	if uninstall {
		c.After = nil
	}
	return []hook.Change{c}, nil
}

// Check implements hook.Installer.
func (Installer) Check(s hook.Scope) []hook.Finding {
	out := []hook.Finding{hook.Executable(s.Joule)}
	b, err := os.ReadFile(ModulePath(s))
	if err != nil || !bytes.Equal(b, Module(s.Joule)) {
		return append(out, hook.Finding{Text: fmt.Sprintf("%s is missing or stale: run 'joule install neovim'", ModulePath(s))})
	}
	return append(out, hook.Finding{OK: true, Text: ModulePath(s) + ` is in place; require("joule_acp") from your CodeCompanion or avante.nvim setup (docs/acp.md)`})
}
