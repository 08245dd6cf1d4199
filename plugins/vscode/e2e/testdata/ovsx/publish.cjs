// publish.cjs: `ovsx publish DIR` for each extension directory given, with
// ovsx's own code, against the registry at REGISTRY/<DIR's base name> (the
// Go test's stand-in for open-vsx.org on loopback: nothing leaves the
// machine).
//
//   node publish.cjs NODE_MODULES REGISTRY DIR...
//
// ovsx packages DIR with its own @vscode/vsce (createVSIX, which validates
// the manifest) and uploads the .vsix to REGISTRY/api/-/publish. Its
// license check (check-license.ts) runs only when the registry is
// open-vsx.org, and in CI it never stops a package; so it is called here
// first, as open-vsx.org's own refusal of an unlicensed extension would.
// One JSON line per DIR: {"dir", "published"} or {"dir", "error"}.
const path = require("node:path");
const { createRequire } = require("node:module");

const [modules, registryUrl, ...dirs] = process.argv.slice(2);
const req = createRequire(path.join(path.resolve(modules), "ovsx", "package.json"));
const ovsx = req("ovsx");

async function one(dir) {
  // ovsx's Registry says which registries need the license check: the
  // default one, open-vsx.org, does.
  if (!new ovsx.Registry({}).requiresLicense) throw new Error("ovsx no longer checks licenses for open-vsx.org");
  // isLicenseOk also runs ovsx's validateManifest (publisher, name, version).
  if (!(await ovsx.isLicenseOk(dir))) throw new Error("This extension cannot be accepted because it has no license.");
  const registry = `${registryUrl}/${path.basename(dir)}`;
  const results = await ovsx.publish({ packagePath: [dir], registryUrl: registry, pat: "dry-run", dependencies: false });
  const failed = results.find((r) => r.status === "rejected");
  if (failed) throw failed.reason;
}

(async () => {
  for (const dir of dirs) {
    const log = console.log;
    let out = "";
    console.log = (...a) => { out += a.join(" ") + "\n"; }; // ovsx's and vsce's own output
    try {
      await one(dir);
      console.log = log;
      console.log(JSON.stringify({ dir, published: out.trim() }));
    } catch (e) {
      console.log = log;
      console.log(JSON.stringify({ dir, error: String((e && e.message) || e), output: out.trim() }));
    }
  }
})();
