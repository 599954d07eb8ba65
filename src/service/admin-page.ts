// stand-in: replaced by feat/metrics
/** The admin port's live page: self-contained HTML that polls `/stats.json` every second (stand-in: prints the JSON). */
export function renderAdminPage(): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>ratecontract</title></head>
<body><h1>ratecontract</h1><pre id="stats">loading...</pre>
<script>
async function poll() {
  try { const r = await fetch('/stats.json'); document.getElementById('stats').textContent = JSON.stringify(await r.json(), null, 2); } catch {}
}
poll(); setInterval(poll, 1000);
</script></body></html>
`;
}
