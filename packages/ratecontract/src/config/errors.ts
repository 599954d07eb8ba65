import { ConfigError, type ErrorCode } from '../core/errors.js';

/**
 * An invalid or unreadable config file. The message is one line:
 * `ratecontract.yaml: limits[2].window: "15x" is not a duration; ... (line 9, column 13)`:
 * the file, the path inside it (`option`), what is wrong, and where.
 */
export class ConfigFileError extends ConfigError {
  readonly file: string;
  /** 1-based line of the offending value, when known. */
  readonly line: number | undefined;
  readonly column: number | undefined;
  /** What is wrong, without the file, path and position. */
  readonly detail: string;

  constructor(
    code: ErrorCode,
    file: string,
    option: string,
    detail: string,
    position?: { readonly line: number; readonly column: number },
    options?: { cause?: unknown },
  ) {
    super(code, option, detail, options);
    this.name = 'ConfigFileError';
    this.file = file;
    this.line = position?.line;
    this.column = position?.column;
    this.detail = detail;
    // Syntax and read errors have no path inside the file (option ''); a syntax error's detail starts with its line.
    this.message = option === '' ? `${file}: ${detail}` : `${file}: ${option}: ${detail}${position === undefined ? '' : ` (line ${position.line}, column ${position.column})`}`;
  }
}
