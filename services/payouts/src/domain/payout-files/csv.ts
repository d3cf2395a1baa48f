/**
 * CSV as payment providers write and read it (RFC 4180): fields separated by commas, quoted with
 * double quotes when they hold a comma, a quote or a line break, a quote inside doubled. Files
 * are written with CRLF line ends; read with CRLF or LF, a leading byte-order mark ignored.
 */

const needsQuotes = /[",\r\n]/;

export function csvCell(value: string): string {
  return needsQuotes.test(value) || value !== value.trim() ? `"${value.replaceAll('"', '""')}"` : value;
}

/** Rows as a file: each row's cells quoted where needed, every line ended by CRLF. */
export function csvText(rows: readonly (readonly string[])[]): string {
  return rows.map((row) => `${row.map(csvCell).join(",")}\r\n`).join("");
}

/** One record of a file, with the line it starts on (1 for the first). */
export interface CsvRecord {
  line: number;
  cells: string[];
}

/** A file that is not CSV: an unclosed quote, or text after a closing quote. */
export class CsvSyntaxError extends Error {
  constructor(
    readonly line: number,
    message: string,
  ) {
    super(message);
  }
}

/**
 * The file's records in order, blank lines left out. A quoted field may span lines; its record
 * keeps the line it starts on, so an error names the line a person sees in an editor.
 */
export function parseCsv(text: string): CsvRecord[] {
  const source = text.startsWith("\uFEFF") ? text.slice(1) : text;
  const records: CsvRecord[] = [];
  let line = 1;
  let recordLine = 1;
  let cells: string[] = [];
  let cell = "";
  let quoted = false;
  let afterQuote = false;
  const endRecord = () => {
    cells.push(cell);
    if (!(cells.length === 1 && cells[0]?.trim() === "")) records.push({ line: recordLine, cells });
    cells = [];
    cell = "";
  };
  for (let index = 0; index < source.length; index++) {
    const char = source[index];
    if (quoted) {
      if (char === '"') {
        if (source[index + 1] === '"') {
          cell += '"';
          index++;
        } else {
          quoted = false;
          afterQuote = true;
        }
      } else {
        if (char === "\n") line++;
        cell += char;
      }
      continue;
    }
    if (char === ",") {
      cells.push(cell);
      cell = "";
      afterQuote = false;
    } else if (char === "\r" || char === "\n") {
      if (char === "\r" && source[index + 1] === "\n") index++;
      endRecord();
      afterQuote = false;
      line++;
      recordLine = line;
    } else if (char === '"' && cell.trim() === "" && !afterQuote) {
      quoted = true;
      cell = "";
    } else if (afterQuote && char?.trim() !== "") {
      throw new CsvSyntaxError(line, "Text after a closing quote: a quote inside a field must be doubled");
    } else if (!afterQuote) {
      cell += char;
    }
  }
  if (quoted) throw new CsvSyntaxError(recordLine, "A quoted field is never closed");
  if (cell !== "" || cells.length > 0) endRecord();
  return records;
}
