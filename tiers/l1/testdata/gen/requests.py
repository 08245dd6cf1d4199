# Generates ../requests.txt, the L1 request table (see reader_test.go):
# phrasings written for the shop fixture. Rerun after editing:
#   python3 tiers/l1/testdata/gen/requests.py
import os
out = []
def c(prompt, expect): out.append(("close", prompt, expect))
def m(prompt, why=""): out.append(("miss", prompt, why))

# Renames: (kind word, qualified names, file, line, col, new names)
syms = [
  ("function", ["clamp", "inventory.clamp"], "inventory/item.go", 90, 6, "bound"),
  ("function", ["Summary", "inventory.Summary"], "inventory/report.go", 15, 6, "Describe"),
  ("function", ["NewServer", "server.NewServer"], "server/server.go", 21, 6, "Open"),
  ("function", ["Packaging", "pricing.Packaging"], "pricing/pricing.go", 41, 6, "PackagingCost"),
  ("function", ["round", "pricing.round"], "pricing/pricing.go", 52, 6, "roundCents"),
  ("function", ["handleHealth"], "server/server.go", 37, 6, "health"),
  ("method", ["Store.Add", "inventory.Store.Add"], "inventory/item.go", 44, 17, "Put"),
  ("method", ["Store.Get", "(*Store).Get"], "inventory/item.go", 57, 17, "Lookup"),
  ("method", ["Store.Remove"], "inventory/item.go", 66, 17, "Take"),
  ("method", ["Store.Total"], "inventory/report.go", 6, 17, "Units"),
  ("method", ["Server.Routes", "(*Server).Routes"], "server/server.go", 42, 20, "Handler"),
  ("method", ["Shape.Area", "pricing.Shape.Area"], "pricing/pricing.go", 12, 2, "Surface"),
  ("type", ["Store", "inventory.Store"], "inventory/item.go", 24, 6, "Stock"),
  ("type", ["Item", "inventory.Item"], "inventory/item.go", 16, 6, "Product"),
  ("type", ["Server", "server.Server"], "server/server.go", 14, 6, "App"),
  ("interface", ["Shape", "pricing.Shape"], "pricing/pricing.go", 11, 6, "Sized"),
  ("struct", ["Box", "pricing.Box"], "pricing/pricing.go", 16, 6, "Crate"),
  ("field", ["Item.Quantity", "inventory.Item.Quantity"], "inventory/item.go", 19, 2, "Qty"),
  ("field", ["Server.Addr"], "server/server.go", 17, 2, "Address"),
  ("field", ["Tube.Radius"], "pricing/pricing.go", 25, 2, "R"),
  ("field", ["Store.limit"], "inventory/item.go", 26, 2, "max"),
  ("variable", ["ErrNotFound", "inventory.ErrNotFound"], "inventory/item.go", 10, 5, "ErrMissing"),
  ("constant", ["DefaultCapacity", "inventory.DefaultCapacity"], "inventory/item.go", 13, 7, "InitialSize"),
  ("constant", ["Rounding", "pricing.Rounding"], "pricing/pricing.go", 38, 7, "Step"),
]
for kind, names, f, line, col, new in syms:
  exp = "rename %s:%d:%d %s" % (f, line, col, new)
  base = os.path.basename(f)
  n0 = names[0]
  last = n0.split(".")[-1]
  c("rename %s to %s" % (n0, new), exp)
  c("Rename `%s` to `%s`." % (n0, new), exp)
  c("rename the %s %s to %s" % (kind, n0, new), exp)
  c("Rename the %s `%s` in %s to `%s`" % (kind, n0, f, new), exp)
  c("rename %s → %s" % (n0, new), exp)
  c("please rename %s into %s everywhere" % (n0, new), exp)
  c("rename %s to %s at %s:%d:%d" % (last if "." not in n0 or kind in ("method","field") and False else n0, new, f, line, col), exp)
  c("rename the %s %s (%s:%d) to %s" % (kind, n0, f, line, new), exp)
  c("Rename %s, declared in %s, to %s." % (n0, base, new), exp)
  c("rename the symbol %s as %s" % (n0, new), exp)
  for alt in names[1:]:
    c("rename %s to %s" % (alt, new), exp)
  c("/rename %s:%d:%d %s" % (f, line, col, new), exp)
  if kind in ("method", "field"):
    t, mm = n0.split(".")[-2:]
    c("rename the %s %s of %s to %s" % (kind, mm, t, new), exp)
    c("Rename %s's %s %s to %s" % (t, mm, kind, new), exp)
  # Near misses: a wrong kind, a wrong file, a wrong line.
  wrong = "type" if kind not in ("type", "struct", "interface") else "function"
  m("rename the %s %s to %s" % (wrong, n0, new), "not a")
  other = "cmd/shopd/main.go" if not f.startswith("cmd") else "pricing/pricing.go"
  m("rename %s in %s to %s" % (n0, other, new), "not")
  m("rename %s to %s at %s:%d:%d" % (n0, new, f, line + 1 if line > 3 else line + 2, col), "")

# Locals and parameters, disambiguated by function or position.
c("rename the variable limit in New to max", "rename inventory/item.go:36:2 max")
c("rename the local variable total in func Total to sum", "rename inventory/report.go:7:2 sum")
c("rename the parameter cfg in func Price to rules", "rename pricing/pricing.go:46:12 rules")
c("rename variable base in Price to subtotal", "rename pricing/pricing.go:47:2 subtotal")
c("rename sku to key at server/server.go:27:2", "rename server/server.go:27:2 key")
c("rename Store to Stock at inventory/item.go:24", "rename inventory/item.go:24:6 Stock")
c("rename the parameter quantity in Store.Remove to n", "rename inventory/item.go:66:36 n")
c("rename the import inv to inventory", "rename pricing/pricing.go:7:2 inventory")
c("rename the import alias inv in pricing/pricing.go to stock", "rename pricing/pricing.go:7:2 stock")
m("rename sku to key", "ambiguous")
m("rename the variable sku to key", "ambiguous")
m("rename the parameter sku in func Total to key", "")
m("rename limit in Total to max", "")
m("rename the variable limit in New to cfg", "already declared")

# Packages.
c("rename package pricing to prices", "rename pricing/pricing.go:2:9 prices")
c("Rename the package `server` to `web`.", "rename server/server.go:2:9 web")
c("rename package example.com/shop/inventory to stock", "rename inventory/item.go:2:9 stock")
c("rename the package ./pricing to cost", "rename pricing/pricing.go:2:9 cost")
m("rename package main to app", "main package")
m("rename package pricing to pkg/prices", "")
m("rename package nosuch to other", "no package")

# Ambiguous names and names that do not exist.
for p in ["rename Config to Settings", "rename New to Make", "rename Area to Surface", "rename the type Config to Options",
          "rename the function New to Create", "rename the method Area to Size", "rename Config.Limit2 to Max",
          "rename Nope to Yes", "rename the function Missing to Found", "rename inventory.Nope to X",
          "rename Box.Area to Size", "rename the method Area of Tube to Size", "rename Store to Item",
          "rename Store.Add to Get", "rename clamp to func", "rename clamp to 9lives", "rename Store.Get to get"]:
  m(p)
c("rename the type Config in pricing/pricing.go to Rules", "rename pricing/pricing.go:32:6 Rules")
c("rename the type Config in package inventory to Options", "rename inventory/item.go:30:6 Options")
c("rename pricing.Config to Rules", "rename pricing/pricing.go:32:6 Rules")
c("rename inventory.New to Open", "rename inventory/item.go:35:6 Open")
c("rename the function New in inventory/item.go to Open", "rename inventory/item.go:35:6 Open")
c("rename the function New on line 57 to Defaults", "rename pricing/pricing.go:57:6 Defaults")
c("rename Config.Limit to Max", "rename inventory/item.go:31:2 Max")

# Things that are not renames of code.
for p in ["rename the branch to main", "rename the branch feature-x to feature-y", "explain rename", "explain how rename works",
          "rename it in the README only", "rename Store to Stock in the README only", "rename Store to Stock only in server/server.go",
          "rename the file item.go to items.go", "rename this to that", "rename the directory cmd to bin", "rename",
          "rename Store", "rename Store to", "rename Store Stock", "rename Store to Stock and add a test",
          "rename Store to Stock, then run the tests", "should I rename Store to Stock?", "why is it called Store",
          "rename Store to the best name", "rename all the things", "rename the repo to shop2", "rename the tab to Shop",
          "rename foo.ts:3:5 to bar", "rename `Store` to `Stock` in docs/**", "rename Store to Stock in inventory",
          "rename the column price to cost", "rename the commit message", "rename Store to Stock at inventory/item.go:25",
          ]:
  m(p)

# Formatting.
for p, e in [("format the repo", "format cmd/shopd/banner.go,scripts/deploy.sh"),
             ("format", "format cmd/shopd/banner.go,scripts/deploy.sh"),
             ("Format everything.", "format cmd/shopd/banner.go,scripts/deploy.sh"),
             ("format the whole project", "format cmd/shopd/banner.go,scripts/deploy.sh"),
             ("reformat the codebase", "format cmd/shopd/banner.go,scripts/deploy.sh"),
             ("Run gofmt on cmd/shopd/banner.go.", "format cmd/shopd/banner.go"),
             ("run gofmt on the repo", "format cmd/shopd/banner.go"),
             ("run gofmt", "format cmd/shopd/banner.go"),
             ("run go fmt on cmd/shopd/banner.go", "format cmd/shopd/banner.go"),
             ("please format the file cmd/shopd/banner.go", "format cmd/shopd/banner.go"),
             ("gofmt cmd/shopd/banner.go", "format cmd/shopd/banner.go"),
             ("gofmt the repo", "format cmd/shopd/banner.go"),
             ("gofmt ./...", "format cmd/shopd/banner.go"),
             ("format cmd/shopd/banner.go", "format cmd/shopd/banner.go"),
             ("format `cmd/shopd/banner.go` with gofmt", "format cmd/shopd/banner.go"),
             ("Format banner.go using gofmt.", "format cmd/shopd/banner.go"),
             ("format the cmd directory", "format cmd/shopd/banner.go"),
             ("format cmd/", "format cmd/shopd/banner.go"),
             ("format ./cmd/...", "format cmd/shopd/banner.go"),
             ("format cmd/shopd", "format cmd/shopd/banner.go"),
             ("format files in cmd", "format cmd/shopd/banner.go"),
             ("format all Go files", "format cmd/shopd/banner.go"),
             ("format all the go files", "format cmd/shopd/banner.go"),
             ("format *.go", "format cmd/shopd/banner.go"),
             ("format the code with gofmt", "format cmd/shopd/banner.go"),
             ("apply gofmt to cmd/shopd/banner.go", "format cmd/shopd/banner.go"),
             ("run goimports on cmd/shopd/banner.go", "format cmd/shopd/banner.go"),
             ("goimports the repo", "format cmd/shopd/banner.go"),
             ("fix imports", "format cmd/shopd/banner.go"),
             ("organize imports in cmd/shopd/banner.go", "format cmd/shopd/banner.go"),
             ("Organise the imports", "format cmd/shopd/banner.go"),
             ("sort the imports", "format cmd/shopd/banner.go"),
             ("clean up the imports in cmd/", "format cmd/shopd/banner.go"),
             ("format the repo and fix imports", "format cmd/shopd/banner.go"),
             ("format scripts/deploy.sh", "format scripts/deploy.sh"),
             ("format scripts/deploy.sh with shfmt", "format scripts/deploy.sh"),
             ("run shfmt on scripts/", "format scripts/deploy.sh"),
             ("format the scripts folder", "format scripts/deploy.sh"),
             ("format *.sh", "format scripts/deploy.sh"),
             ("run the formatter on cmd/shopd/banner.go", "format cmd/shopd/banner.go"),
             ("please format cmd/shopd/banner.go, thanks", "format cmd/shopd/banner.go"),
             ("format pricing/pricing.go", "format -"),
             ("gofmt pricing/", "format -"),
             ]:
  c(p, e)
for p in ["format the output as JSON", "format the output", "format it", "format this", "format the date as ISO 8601",
          "format a.go and b.go", "format the disk", "format my hard drive", "format the response as a table",
          "format cmd/shopd/banner.go with prettier", "gofmt scripts/deploy.sh", "format /etc/passwd", "format ../other",
          "format the repo with yapf", "run gofmt and goimports", "format as markdown", "run the tests",
          "format the string with %d", "fix the imports and the bug", "organize imports in scripts/deploy.sh with black",
          "format nosuch/ dir", "format *.rs", "format README", "format docs/*.md"]:
  m(p)

# Replace.
for p, e in [('replace "Store" with "Stock" in README.md', "replace README.md"),
             ('Replace `items` by `stock` in README.md', "replace README.md"),
             ('replace all occurrences of "shop" with "store" in *.md', "replace README.md"),
             ('replace "127.0.0.1:8080" with "127.0.0.1:9090" in cmd/shopd/main.go', "replace cmd/shopd/main.go"),
             ('replace "127.0.0.1:8080" with "127.0.0.1:9090"', "replace cmd/shopd/main.go"),
             ('replace the text "inventory: " with "inv: " in inventory/item.go', "replace inventory/item.go"),
             ('replace the regex `inventory: (\\w+)` with "stock: $1" in inventory/*.go', "replace inventory/item.go"),
             ('replace the regex /inventory:\\s(\\w+)/ with "stock: $1" in inventory/*.go', "replace inventory/item.go"),
             ('replace regex `deploy(ing)?` with `ship$1` in scripts/deploy.sh', "replace scripts/deploy.sh"),
             ('s/deploying/shipping/g in scripts/deploy.sh', "replace scripts/deploy.sh"),
             ('s/small/tiny/ in README.md', "replace README.md"),
             ('replace "not found" with "missing" in all Go files', "replace inventory/item.go"),
             ('replace "listen address" with "address to listen on" in the cmd directory', "replace cmd/shopd/main.go"),
             ('/replace "ok" "OK" server/server.go', "replace server/server.go"),
             ('substitute "Store" with "Stock" in README.md', "replace README.md"),
             ]:
  c(p, e)
for p in ['replace foo with bar', 'replace Store with Stock', 'replace "Store" with Stock', 'replace "Store"',
          'replace the bad code with good code', 'replace "nosuchtext" with "x"', 'replace "x" with "y" in /etc/hosts',
          'replace "x" with "y" and commit', 'replace the regex /(/ with "x"', 's/a/b/c/ in x.go', 'replace "" with "x"',
          'replace the old API with the new one', 'substitute "Box" with "Crate" in README.md']:
  m(p)

# Look-ups: where is X defined.
defs = [("clamp", "inventory/item.go:90"), ("inventory.clamp", "inventory/item.go:90"), ("Summary", "inventory/report.go:15"),
        ("Store.Get", "inventory/item.go:57"), ("(*Store).Get", "inventory/item.go:57"), ("inventory.Store.Add", "inventory/item.go:44"),
        ("Server.ServeHTTP", "server/server.go:26"), ("Shape.Area", "pricing/pricing.go:12"), ("Box.Area", "pricing/pricing.go:21"),
        ("Tube.Area", "pricing/pricing.go:29"), ("pricing.Config", "pricing/pricing.go:32"), ("inventory.Config", "inventory/item.go:30"),
        ("ErrNotFound", "inventory/item.go:10"), ("DefaultCapacity", "inventory/item.go:13"), ("Item.Quantity", "inventory/item.go:19"),
        ("Server.Addr", "server/server.go:17"), ("handleHealth", "server/server.go:37"), ("pricing.New", "pricing/pricing.go:57"),
        ("inventory.New", "inventory/item.go:35"), ("round", "pricing/pricing.go:52"), ("Packaging", "pricing/pricing.go:41"),
        ("Store.SKUs", "inventory/item.go:79"), ("NewServer", "server/server.go:21")]
for s, loc in defs:
  e = "def " + loc
  c("where is %s defined" % s, e)
  c("Where is `%s` defined?" % s, e)
  c("find the definition of %s" % s, e)
  c("go to definition of %s" % s, e)
  c("where's %s declared" % s, e)
  c("which file defines %s" % s, e)
c("where is the method Area of Box defined", "def pricing/pricing.go:21")
c("where is the Get method of Store defined", "def inventory/item.go:57")
c("where is the type Config in package pricing declared", "def pricing/pricing.go:32")
c("where is the function New in inventory/item.go defined", "def inventory/item.go:35")
c("where is the field Quantity of Item defined", "def inventory/item.go:19")
c("where is the interface Shape defined", "def pricing/pricing.go:11")
c("where is the variable limit in New defined", "def inventory/item.go:36")
# find T.M and find X: the definition ("find" is definition vocabulary,
# tiers/ask); find references to X, where is X used, /find X: the
# definition, then its uses.
for s, loc, use in [("Store.Get", "inventory/item.go:57", "server/server.go:28"), ("(*Store).Get", "inventory/item.go:57", "inventory/item.go:67"),
                    ("Store.Add", "inventory/item.go:44", "cmd/shopd/main.go:18"), ("Shape.Area", "pricing/pricing.go:12", "pricing/pricing.go:42"),
                    ("Item.Quantity", "inventory/item.go:19", "inventory/item.go:46"), ("clamp", "inventory/item.go:90", "inventory/report.go:9"),
                    ("inventory.Summary", "inventory/report.go:15", "cmd/shopd/main.go:21"), ("ErrNotFound", "inventory/item.go:10", "inventory/item.go:60"),
                    ("Server.Addr", "server/server.go:17", "cmd/shopd/main.go:23"), ("Rounding", "pricing/pricing.go:38", "pricing/pricing.go:53")]:
  e = "uses %s %s" % (loc, use)
  c("find %s" % s, "def " + loc)
  c("find `%s`" % s, "def " + loc)
  c("find references to %s" % s, e)
  c("where is %s used" % s, e)
  c("/find %s" % s, e)
# who calls X.
for s, loc, call in [("clamp", "inventory/item.go:90", "inventory/report.go:9"), ("round", "pricing/pricing.go:52", "pricing/pricing.go:49"),
                     ("Store.Get", "inventory/item.go:57", "server/server.go:28"), ("pricing.Packaging", "pricing/pricing.go:41", "cmd/shopd/main.go:21"),
                     ("NewServer", "server/server.go:21", "cmd/shopd/main.go:22"), ("pricing.Price", "pricing/pricing.go:46", "server/server.go:33"),
                     ("Summary", "inventory/report.go:15", "cmd/shopd/main.go:21"), ("Store.SKUs", "inventory/item.go:79", "inventory/report.go:16")]:
  e = "callers %s %s" % (loc, call)
  c("who calls %s" % s, e)
  c("Who calls `%s`?" % s, e)
  c("find callers of %s" % s, e)
  c("list the callers of %s" % s, e)
  c("where is %s called" % s, e)
  c("what calls %s" % s, e)
c("who calls handleHealth", "callers server/server.go:37 -")

# Refactorings through gopls (code actions asked for by name): the
# expectation is "refactor FILE TEXT", TEXT being in FILE after and not
# before. Columns are computed from the fixture.
here0 = os.path.dirname(os.path.abspath(__file__))
def src(f): return open(os.path.join(here0, "..", "shop", f)).read().split("\n")
def span(f, line, what):
  c0 = src(f)[line-1].index(what) + 1
  return "%s:%d:%d-%d:%d" % (f, line, c0, line, c0 + len(what))
def at(f, line, what): return "%s:%d:%d" % (f, line, src(f)[line-1].index(what) + 1)
P, I = "pricing/pricing.go", "inventory/item.go"
c("extract lines 91-96 of %s into a function named bounds" % I, "refactor %s func bounds(" % I)
c("Extract lines 91 to 96 in `%s` into a new function called `bounds`." % I, "refactor %s func bounds(" % I)
c("extract %s:91-96 into a function named bounds" % I, "refactor %s func bounds(" % I)
c("extract function bounds from lines 91-96 of %s" % I, "refactor %s func bounds(" % I)
c("please extract lines 47-48 of %s into a function" % P, "refactor %s func newFunction(" % P)
c("extract the code on lines 47-48 of %s into a function called withTaxes" % P, "refactor %s := withTaxes(" % P)
c("extract the expression at %s into a variable named net" % span(P, 49, "withTax * (1 - cfg.Discount)"), "refactor %s net := withTax * (1 - cfg.Discount)" % P)
c("extract %s into a variable" % span(P, 49, "1 - cfg.Discount"), "refactor %s newVar := 1 - cfg.Discount" % P)
c("extract this expression at %s to a constant named centsPerUnit" % span(P, 47, "100"), "refactor %s const centsPerUnit = 100" % P)
c("inline the call at %s" % at(P, 42, "round("), "refactor %s return (int64(s.Area()*3) + Rounding/2)" % P)
c("inline the call to round at %s" % at(P, 42, "round("), "refactor %s return (int64(s.Area()*3) + Rounding/2)" % P)
c("inline the call to round on line 42 of %s" % P, "refactor %s return (int64(s.Area()*3) + Rounding/2)" % P)
c("Inline the call to `pricing.round` in %s on line 49." % P, "refactor %s return (int64(withTax*(1-cfg.Discount)) + Rounding/2)" % P)
c("inline %s" % at(P, 42, "round("), "refactor %s return (int64(s.Area()*3) + Rounding/2)" % P)
# Near misses: the reader's (no gopls), then gopls's.
m("extract lines 91-96 into a function named bounds", "name the file")
m("extract lines 96-91 of %s into a function" % I, "end before they start")
m("extract lines 91-96 of %s into a variable" % I, "from an expression")
m("extract lines 91-96 of README.md into a function", "Go files only")
m("extract lines 91-96 of %s into a function named 2x" % I, "not a valid Go identifier")
m("extract lines 91-96 of %s" % I, "say what to extract it into")
m("extract lines 91-96 of %s into a function named bounds and test it" % I, "not understood")
m("extract %s into a function" % at(P, 42, "round("), "is a position")
m("extract %s into a variable" % "pricing/pricing.go:49:30-49:22", "ends before it starts")
m("extract the archive into /tmp")
m("extract the zip file")
m("extract text from the PDF")
m("inline the function round", "not every call")
m("inline round", "not every call")
m("inline the call at %s:42" % P, "column")
m("inline the call to round", "say where the call is")
m("inline the CSS into the HTML")
m("inline the call at %s and %s" % (at(P, 42, "round("), at(P, 49, "round(")), "not understood")
m("inline the call to clamp at %s" % at(P, 42, "round("), "not a call of clamp")
m("inline the call to int64 on line 42 of %s" % P, "no inline call")
m("inline the call to round on line 43 of %s" % P, "0 calls of round")
m("extract lines 52-53 of %s into a function" % P, "extract function")
# Text searches.
for p in ['find TODO', 'find "in stock"', 'grep listen', "find 'not enough'", 'search for "A small shop"', '/find two words', 'find shopd']:
  c(p, "text")
# Look-up near misses.
for p in ["where is Config defined", "where is New defined", "find Area", "who calls New", "where is Nope defined",
          "find Store.Nope", "find inventory.Nope", "where is the function Store defined", "where is clamp defined in server/server.go",
          "where is clamp defined on line 12", "who calls Store", "who calls ErrNotFound", "find the bug in server.go",
          "find the bug", "where is the README", "where is the problem", "find a way to make it faster", "where is sku defined",
          "who calls Nope.Get", "where is Store.Get defined in pricing/pricing.go", "find callers of Area", "where is it defined",
          "where is error defined", "find Box.Nope", "find references to Config", "where are the tests",
          "where is the method Add of Item defined"]:
  m(p)
# Not L1 at all.
for p in ["make the tests pass", "add a Remove method to Store", "explain what Store does", "write a README",
          "refactor the server to use chi", "why does Get return an error", "review my code", "what is a Store",
          "implement caching in pricing", "delete the banner function", "upgrade Go to 1.26", "summarize the repo"]:
  m(p)

here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "..", "requests.txt"), "w") as f:
  f.write("# The L1 request table (tiers/l1/reader_test.go), generated by gen/requests.py: do not edit by hand.\n")
  f.write("# verdict<TAB>request<TAB>expectation (close: what the request means on testdata/shop; miss: a reason's substring)\n")
  for v, p, e in out:
    f.write("%s\t%s\t%s\n" % (v, p, e))
print(len(out), sum(1 for o in out if o[0]=="close"), "close")
