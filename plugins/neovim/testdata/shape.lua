-- Prints what an ACP adapter definition holds, one "path<TAB>type<TAB>value"
-- line per field (values for strings, numbers and booleans), so that a test
-- compares joule's adapters with the ones the plugins document. Runs in
-- LuaJIT (Neovim's Lua) with the plugins stubbed: only their setup() and
-- the helper a CodeCompanion adapter calls.
--
--   luajit shape.lua codecompanion|avante doc|module FILE
--
-- doc: FILE is a documented example calling require(PLUGIN).setup({...});
-- module: FILE is joule's joule_acp.lua.
local plugin, what, file = arg[1], arg[2], arg[3]

local config
package.preload["codecompanion"] = function()
  return { setup = function(c) config = c end }
end
package.preload["avante"] = function()
  return { setup = function(c) config = c end }
end
package.preload["codecompanion.adapters.acp.helpers"] = function()
  return { form_messages = function() return "helpers.form_messages" end }
end

local lines = {}
local function emit(path, v)
  local t = type(v)
  local value = ""
  if t == "string" or t == "number" or t == "boolean" then value = tostring(v) end
  lines[#lines + 1] = path .. "\t" .. t .. "\t" .. value
end

local function walk(v, path)
  emit(path, v)
  if type(v) ~= "table" then return end
  if #v > 0 then
    for i = 1, #v do walk(v[i], path .. "[]") end
    return
  end
  for k, x in pairs(v) do
    walk(x, (path == "" and "" or path .. ".") .. tostring(k))
  end
end

local function codecompanion(make)
  local a = make()
  walk(a, "")
  emit("call.setup", a.handlers.setup(a))
  emit("call.auth", a.handlers.auth(a))
  emit("call.form_messages", a.handlers.form_messages(a, {}, {}))
end

local ok, err = pcall(function()
  if what == "doc" then
    dofile(file)
    if plugin == "codecompanion" then
      for _, make in pairs(config.adapters.acp) do codecompanion(make) end
    else
      for _, p in pairs(config.acp_providers) do walk(p, "") end
    end
  else
    local M = dofile(file)
    if plugin == "codecompanion" then codecompanion(M.codecompanion) else walk(M.avante, "") end
  end
end)
if not ok then
  io.stderr:write(tostring(err) .. "\n")
  os.exit(1)
end
table.sort(lines)
io.write(table.concat(lines, "\n"), "\n")
