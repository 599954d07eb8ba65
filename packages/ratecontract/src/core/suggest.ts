/** Edit distance (insertions, deletions, substitutions and adjacent transpositions) between two strings. */
function distance(a: string, b: string): number {
  const rows = a.length + 1;
  const cols = b.length + 1;
  const d: number[] = new Array<number>(rows * cols).fill(0);
  for (let i = 0; i < rows; i++) d[i * cols] = i;
  for (let j = 0; j < cols; j++) d[j] = j;
  for (let i = 1; i < rows; i++) {
    for (let j = 1; j < cols; j++) {
      const sub = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min((d[(i - 1) * cols + j] ?? 0) + 1, (d[i * cols + j - 1] ?? 0) + 1, (d[(i - 1) * cols + j - 1] ?? 0) + sub);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) best = Math.min(best, (d[(i - 2) * cols + j - 2] ?? 0) + 1);
      d[i * cols + j] = best;
    }
  }
  return d[rows * cols - 1] ?? 0;
}

/**
 * The candidate `word` was most likely meant to be: the same ignoring case,
 * or within an edit distance of 2 (1 for words of 3 or 4 characters, 0 for shorter ones).
 * `undefined` when nothing is that close.
 */
export function closest(word: string, candidates: Iterable<string>): string | undefined {
  const lower = word.toLowerCase();
  const allowed = word.length <= 2 ? 0 : word.length <= 4 ? 1 : 2;
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const c of candidates) {
    const other = c.toLowerCase();
    if (other === lower) return c;
    // The distance is at least the difference in length: a candidate that cannot be close is not measured,
    // so a hostile word (a 10 MB value in a config file) costs no table of its size.
    if (Math.abs(other.length - lower.length) > allowed) continue;
    const dist = distance(lower, other);
    if (dist < bestDistance) {
      best = c;
      bestDistance = dist;
    }
  }
  return bestDistance <= allowed ? best : undefined;
}

/** `'; did you mean "onError"?'` when a candidate is close to `word`, else `''`. */
export function didYouMean(word: string, candidates: Iterable<string>): string {
  const hit = closest(word, candidates);
  return hit === undefined ? '' : `; did you mean ${JSON.stringify(hit)}?`;
}
