/**
 * The console's stylesheet, served as its own file (`style-src 'self'`: no inline style anywhere,
 * the chart's SVG included). State is shown in colour and in words, never in colour alone.
 */
export const STYLESHEET = `
:root {
  --ink: #1f2328; --muted: #59636e; --line: #d1d9e0; --soft: #f6f8fa; --paper: #ffffff;
  --brand: #0b3d5c; --link: #0a58ca;
  --ok: #1a7f37; --ok-bg: #dafbe1; --wait: #8a5a00; --wait-bg: #fff4c2; --off: #59636e; --off-bg: #eef1f4;
  --bad: #c11f2a; --bad-bg: #ffebe9; --info-bg: #ddf4ff;
  font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans", Ubuntu, sans-serif;
  font-size: 15px; line-height: 1.5; color: var(--ink); background: var(--soft);
}
* { box-sizing: border-box; }
body { margin: 0; }
a { color: var(--link); text-decoration: none; }
a:hover, a:focus-visible { text-decoration: underline; }
code, pre, .mono { font-family: ui-monospace, SFMono-Regular, "SF Mono", Menlo, Consolas, "Liberation Mono", monospace; font-size: 0.9em; }
code { background: var(--soft); border: 1px solid var(--line); border-radius: 4px; padding: 0 0.3em; overflow-wrap: anywhere; }
/* A sentence may hold a hash or a key (a checkpoint's root, base64): it breaks rather than widen the page. */
main p { overflow-wrap: anywhere; }
code.img { white-space: nowrap; overflow-wrap: normal; }
td.type code { white-space: nowrap; overflow-wrap: normal; }
pre { background: var(--soft); border: 1px solid var(--line); border-radius: 6px; padding: 0.75em 1em; overflow: auto; max-height: 24em; margin: 0; white-space: pre-wrap; overflow-wrap: anywhere; }
h1 { font-size: 1.6em; margin: 0 0 0.2em; line-height: 1.25; overflow-wrap: anywhere; }
h2 { font-size: 1.15em; margin: 0 0 0.6em; }
h3 { font-size: 1em; margin: 1em 0 0.4em; }
p { margin: 0.4em 0; }

.top { background: var(--brand); color: #fff; }
.top .bar { max-width: 1200px; margin: 0 auto; padding: 0 1.25rem; display: flex; align-items: center; gap: 1.5rem; min-height: 3.25rem; }
.brand { font-weight: 700; font-size: 1.1em; color: #fff; letter-spacing: 0.01em; display: inline-flex; align-items: center; gap: 0.45rem; flex: none; }
.brand .sub { font-weight: 400; opacity: 0.8; margin-left: -0.2rem; }
.brand .logo { border-radius: 5px; box-shadow: 0 0 0 1px rgba(255,255,255,0.35); }
.top nav { min-width: 0; overflow-x: auto; scrollbar-width: none; }
.nav { display: flex; gap: 0.25rem; margin: 0; padding: 0; list-style: none; }
.nav li { flex: none; }
.nav a { color: #e6edf3; padding: 0.35rem 0.7rem; border-radius: 6px; display: inline-block; }
.nav a:hover { background: rgba(255,255,255,0.12); text-decoration: none; }
.nav a[aria-current="page"] { background: rgba(255,255,255,0.2); color: #fff; font-weight: 600; }
.who { margin-left: auto; display: flex; align-items: center; gap: 0.75rem; font-size: 0.9em; flex: none; }
.who form { margin: 0; }
.who button { background: transparent; color: #fff; border: 1px solid rgba(255,255,255,0.5); border-radius: 6px; padding: 0.2rem 0.6rem; cursor: pointer; font: inherit; }
.role { border: 1px solid rgba(255,255,255,0.5); border-radius: 999px; padding: 0 0.5em; font-size: 0.85em; }

main { max-width: 1200px; margin: 0 auto; padding: 1.25rem; }
.page-head { display: flex; align-items: baseline; gap: 1rem; flex-wrap: wrap; margin-bottom: 1rem; }
.page-head p { color: var(--muted); margin: 0; }
footer { max-width: 1200px; margin: 0 auto; padding: 0 1.25rem 2rem; color: var(--muted); font-size: 0.85em; }

.card { background: var(--paper); border: 1px solid var(--line); border-radius: 8px; padding: 1rem 1.25rem; margin-bottom: 1rem; }
.grid { display: grid; grid-template-columns: repeat(auto-fit, minmax(320px, 1fr)); gap: 1rem; margin-bottom: 1rem; }
.grid > .card { margin-bottom: 0; }
.stack > * + * { margin-top: 1rem; }
.muted { color: var(--muted); }
.small { font-size: 0.87em; }

.callout { border-left: 4px solid var(--wait); background: var(--wait-bg); }
.callout.ok { border-left-color: var(--ok); background: var(--ok-bg); }
.callout.bad { border-left-color: var(--bad); background: var(--bad-bg); }
.callout.info { border-left-color: var(--link); background: var(--info-bg); }
.flash { padding: 0.75rem 1rem; border-radius: 8px; margin-bottom: 1rem; border: 1px solid var(--line); }
.flash.ok { background: var(--ok-bg); border-color: #9bd3a9; }
.flash.bad { background: var(--bad-bg); border-color: #f5b4b0; }

table { border-collapse: collapse; width: 100%; background: var(--paper); }
th, td { text-align: left; padding: 0.45rem 0.6rem; border-bottom: 1px solid var(--line); vertical-align: top; }
th { font-size: 0.8em; text-transform: uppercase; letter-spacing: 0.04em; color: var(--muted); font-weight: 600; background: var(--soft); }
tbody tr:hover { background: #fafbfc; }
th[scope="row"] { width: 11rem; white-space: nowrap; }
.table-wrap { overflow-x: auto; border: 1px solid var(--line); border-radius: 8px; }
.table-wrap table { border: 0; }
.table-wrap tr:last-child td { border-bottom: 0; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
/* Long host names and rule phrases wrap inside their column instead of widening the table. */
.pending-text { overflow-wrap: anywhere; }
td.pending-col { min-width: 11em; }
td.decided { min-width: 8.5em; }
td.what { overflow-wrap: anywhere; min-width: 14em; }
td .badge.bad { white-space: normal; }
.removed-from { color: var(--bad); }
.proof-form { display: flex; flex-wrap: wrap; gap: 0.5rem; align-items: center; }
.proof-form label { flex-basis: 100%; }
code.img.split { white-space: normal; }
code.img.split span { white-space: nowrap; }
.problem-line { white-space: normal; min-width: 8em; }
.nowrap { white-space: nowrap; }

.badge { display: inline-flex; align-items: center; gap: 0.35em; border-radius: 999px; padding: 0.05em 0.65em; font-size: 0.85em; font-weight: 600; border: 1px solid transparent; white-space: nowrap; }
.badge.running, .badge.allowed, .badge.good { color: var(--ok); background: var(--ok-bg); border-color: #9bd3a9; }
.badge.held_back, .badge.pending, .badge.warn, .badge.failed { color: var(--wait); background: var(--wait-bg); border-color: #e9cf6e; }
.badge.stopped, .badge.neutral { color: var(--off); background: var(--off-bg); border-color: var(--line); }
.badge.deleted, .badge.refused, .badge.bad { color: var(--bad); background: var(--bad-bg); border-color: #f5b4b0; }
.big .badge { font-size: 1em; padding: 0.15em 0.8em; }

ul.plain { list-style: none; padding: 0; margin: 0; }
ul.plain li + li { margin-top: 0.25em; }
ul.adds { list-style: none; padding: 0; margin: 0.5em 0; }
ul.adds li { font-weight: 600; }
.plus { color: var(--ok); font-weight: 700; margin-right: 0.35em; }
.plus.minus { color: var(--bad); }
.why li { margin: 0.2em 0; }
.why ul { margin: 0.2em 0; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 0.3rem 1rem; margin: 0; }
dl.facts dt { color: var(--muted); }
dl.facts dd { margin: 0; overflow-wrap: anywhere; min-width: 0; }
dl.facts dd code.img { white-space: normal; overflow-wrap: anywhere; }

form.filters { display: flex; flex-wrap: wrap; gap: 0.75rem; align-items: flex-end; }
label { display: flex; flex-direction: column; font-size: 0.85em; color: var(--muted); gap: 0.2rem; }
input, select { font: inherit; color: var(--ink); padding: 0.3rem 0.5rem; border: 1px solid var(--line); border-radius: 6px; background: var(--paper); }
input[type="range"] { padding: 0; width: 100%; }
button { font: inherit; cursor: pointer; border-radius: 6px; padding: 0.35rem 0.9rem; border: 1px solid var(--line); background: var(--paper); color: var(--ink); }
button.primary { background: var(--ok); color: #fff; border-color: var(--ok); font-weight: 600; padding: 0.5rem 1.1rem; }
button.primary:hover { background: #116329; }
button.danger, a.button.danger { background: var(--bad); color: #fff; border: 1px solid var(--bad); border-radius: 6px; font-weight: 600; padding: 0.5rem 1.1rem; text-decoration: none; display: inline-block; }
button[disabled] { opacity: 0.55; cursor: not-allowed; }
.actions { display: flex; gap: 0.75rem; align-items: center; flex-wrap: wrap; margin-top: 0.75rem; }

.chart { width: 100%; height: auto; display: block; }
.chart .allowed { fill: #2da44e; }
.chart .refused { fill: #cf222e; }
.chart .failed { fill: #d4a72c; }
.chart .axis { stroke: var(--line); stroke-width: 1; }
.chart .grid-line { stroke: #eaeef2; stroke-width: 1; }
.chart text { fill: var(--muted); font-size: 11px; font-family: inherit; }
.legend { display: flex; flex-wrap: wrap; gap: 0.25rem 1rem; font-size: 0.9em; margin: 0.25rem 0 0.5rem; }
td.badges .badge + .badge { margin-left: 0.3em; }
.swatch { display: inline-block; width: 0.8em; height: 0.8em; border-radius: 2px; margin-right: 0.3em; vertical-align: -0.05em; }
.swatch.allowed { background: #2da44e; }
.swatch.refused { background: #cf222e; }
.swatch.failed { background: #d4a72c; }

.slider { display: grid; grid-template-columns: auto 1fr auto; gap: 0.75rem; align-items: center; }
.pager { display: flex; justify-content: space-between; gap: 1rem; margin-top: 0.75rem; }
.live { font-size: 0.85em; color: var(--ok); }
.live::before { content: "● "; }
.empty { color: var(--muted); font-style: italic; padding: 0.75rem 0; }
.signin { max-width: 38rem; margin: 3rem auto; }

.view-card { padding-bottom: 0.75rem; }
.view-head { display: flex; align-items: baseline; gap: 0.75rem; flex-wrap: wrap; margin-bottom: 0.6rem; }
.view-head h2 { margin: 0; }
.view-frame { display: block; width: 100%; height: 26rem; border: 1px solid var(--line); border-radius: 6px; background: var(--paper); }
#view-status[data-state="failed"] { color: var(--bad); }
#view-status[data-state="ok"] { color: var(--ok); }

/* A narrow window: the header keeps to one line. */
@media (max-width: 900px) {
  .top .bar { gap: 0.75rem; }
  .brand .sub { display: none; }
}

/* A phone: the header stays one line (the links scroll within it, if they must), facts stack, and
   the tables marked .cards become one card per row, each cell beside its column's name. */
@media (max-width: 700px) {
  .top .bar { gap: 0.5rem; padding: 0 0.6rem; }
  .nav { gap: 0.1rem; }
  .nav a { padding: 0.3rem 0.4rem; font-size: 0.93em; }
  .who { gap: 0.4rem; }
  .who .user, .who .role { display: none; }
  .who button { padding: 0.15rem 0.45rem; font-size: 0.9em; }
  main { padding: 0.75rem; }
  .card { padding: 0.75rem 0.85rem; }
  dl.facts { grid-template-columns: minmax(0, 1fr); gap: 0 0; }
  dl.facts dt { margin-top: 0.4rem; }
  table.cards thead { display: none; }
  table.cards, table.cards tbody, table.cards tr, table.cards td { display: block; width: 100%; }
  table.cards tr { border-bottom: 1px solid var(--line); padding: 0.35rem 0; }
  table.cards tr:last-child { border-bottom: 0; }
  table.cards tr[hidden] { display: none; }
  table.cards th[scope="row"] { display: block; width: auto; border: 0; background: none; padding: 0.3rem 0.75rem 0.1rem; }
  table.cards td { position: relative; border: 0; padding: 0.15rem 0.75rem 0.15rem 8.5rem; min-height: 2em; text-align: left; white-space: normal; overflow-wrap: anywhere; }
  td.pending-col, td.what, td.decided { min-width: 0; }
  table.cards td::before { content: attr(data-label); position: absolute; left: 0.75rem; top: 0.4rem; width: 7.5rem; font-size: 0.72em; line-height: 1.3; text-transform: uppercase; letter-spacing: 0.03em; color: var(--muted); font-weight: 600; }
  table.cards td code.img { white-space: normal; }
  .problem-line { min-width: 0; }
}

/* A small phone: the logo stands for the name, so that every link fits on the one line. */
@media (max-width: 480px) {
  .brand .name { display: none; }
  .top .bar { gap: 0.4rem; padding: 0 0.5rem; }
  .nav { gap: 0; }
  .nav a { padding: 0.3rem 0.32rem; font-size: 0.88em; }
  .who button { font-size: 0.85em; padding: 0.15rem 0.4rem; }
}
`;
