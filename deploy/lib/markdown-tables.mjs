// The tables of a Markdown document, so that deploy/validate.mjs can hold the docs to the
// manifests: each table with its header cells and its rows' cells (trimmed, pipes inside code
// spans kept).

/** Splits one table line into its cells. */
function cellsOf(line) {
  const cells = [];
  let cell = "";
  let inCode = false;
  const body = line.trim().replace(/^\|/, "").replace(/\|$/, "");
  for (const character of body) {
    if (character === "`") inCode = !inCode;
    if (character === "|" && !inCode) {
      cells.push(cell.trim());
      cell = "";
    } else {
      cell += character;
    }
  }
  cells.push(cell.trim());
  return cells;
}

/** Every table of `markdown`: `{ header: string[], rows: string[][] }`, in order. */
export function markdownTables(markdown) {
  const tables = [];
  const lines = markdown.split("\n");
  let inFence = false;
  for (let i = 0; i < lines.length; i++) {
    if (lines[i].trimStart().startsWith("```")) inFence = !inFence;
    if (inFence) continue;
    const isTableLine = (line) => line?.trim().startsWith("|");
    if (isTableLine(lines[i]) && /^\s*\|[\s:|-]+\|\s*$/.test(lines[i + 1] ?? "")) {
      const header = cellsOf(lines[i]);
      const rows = [];
      let j = i + 2;
      while (isTableLine(lines[j])) rows.push(cellsOf(lines[j++]));
      tables.push({ header, rows });
      i = j - 1;
    }
  }
  return tables;
}

/** The one table whose header starts with these cells; throws when none or several do. */
export function tableStartingWith(tables, ...firstCells) {
  const found = tables.filter((table) => firstCells.every((cell, index) => table.header[index] === cell));
  if (found.length !== 1) {
    throw new Error(`expected one table headed "${firstCells.join(" | ")}", found ${found.length}`);
  }
  return found[0];
}

/** The names written as code spans in a cell: "`gateway`, `ledger` (why)" -> ["gateway", "ledger"]. */
export function codeSpans(cell) {
  return [...cell.matchAll(/`([^`]+)`/g)].map((match) => match[1]);
}
