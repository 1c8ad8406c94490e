// Size of the affiliate portal as served (the three files, unminified):
// raw and gzipped, each and summed. Exits 1 when the gzipped sum is above
// the budget (30 KB).
// Usage: node portal/scripts/size.mjs   (prints JSON)
import { readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { fileURLToPath } from 'node:url';

export const FILES = ['index.html', 'portal.js', 'portal.css'].map((name) => ({
  name,
  path: fileURLToPath(new URL(`../src/${name}`, import.meta.url)),
}));

/** The gzipped sum may not exceed this many bytes. */
export const BUDGET = 30_000;

export function sizes() {
  const files = {};
  let raw = 0;
  let gzip = 0;
  for (const { name, path } of FILES) {
    const bytes = readFileSync(path);
    const zipped = gzipSync(bytes, { level: 9 }).length;
    files[name] = { raw: bytes.length, gzip: zipped };
    raw += bytes.length;
    gzip += zipped;
  }
  return { files, raw, gzip, budget: BUDGET };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const s = sizes();
  console.log(JSON.stringify(s, null, 2));
  if (s.gzip > BUDGET) {
    console.error(`portal: ${s.gzip} bytes gzipped, above the budget of ${BUDGET}`);
    process.exit(1);
  }
}
