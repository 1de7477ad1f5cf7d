// Cron expressions in words: "every day at 04:00, Asia/Seoul". The common shapes get short,
// ops-friendly phrases; anything else falls back to cronstrue. Validation is the server's job
// (cronPreview); this module only describes.
import cronstrue from 'cronstrue';

const DAY_NAMES = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];
const DAY_ABBR = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'];
const MONTH_NAMES = [
  'January', 'February', 'March', 'April', 'May', 'June',
  'July', 'August', 'September', 'October', 'November', 'December',
];

const DESCRIPTORS: Record<string, string> = {
  '@yearly': 'every year on 1 January at 00:00',
  '@annually': 'every year on 1 January at 00:00',
  '@monthly': 'every month on day 1 at 00:00',
  '@weekly': 'every Sunday at 00:00',
  '@daily': 'every day at 00:00',
  '@midnight': 'every day at 00:00',
  '@hourly': 'every hour at minute 0',
};

const isNumber = (f: string): boolean => /^\d+$/.test(f);
const pad2 = (n: number): string => String(n).padStart(2, '0');

function clock(hour: number, minute: number, second: number): string {
  const hm = `${pad2(hour)}:${pad2(minute)}`;
  return second === 0 ? hm : `${hm}:${pad2(second)}`;
}

function joinWords(items: string[]): string {
  if (items.length <= 1) return items.join('');
  return `${items.slice(0, -1).join(', ')} and ${items[items.length - 1] ?? ''}`;
}

/** dayNumber maps a day-of-week token (0–7, SUN–SAT) to 0–6, or null. */
function dayNumber(token: string): number | null {
  if (isNumber(token)) {
    const n = Number(token);
    return n >= 0 && n <= 7 ? n % 7 : null;
  }
  const i = DAY_ABBR.indexOf(token.toUpperCase());
  return i >= 0 ? i : null;
}

/** describeDays turns a day-of-week field such as "1-5" or "MON,WED" into words, or null. */
function describeDays(field: string): string | null {
  if (field === '*' || field === '?') return null;
  const range = /^(\w+)-(\w+)$/.exec(field);
  if (range?.[1] && range[2]) {
    const a = dayNumber(range[1]);
    const b = dayNumber(range[2]);
    if (a === null || b === null) return null;
    if (a === 1 && b === 5) return 'weekday (Monday to Friday)';
    return `${DAY_NAMES[a] ?? ''} to ${DAY_NAMES[b] ?? ''}`;
  }
  const days: string[] = [];
  for (const part of field.split(',')) {
    const d = dayNumber(part);
    if (d === null) return null;
    days.push(DAY_NAMES[d] ?? '');
  }
  if (days.length === 2 && days.includes('Saturday') && days.includes('Sunday')) return 'weekend day (Saturday and Sunday)';
  return joinWords(days);
}

/** everyPhrase renders a step field such as "*\/15" as "every 15 minutes". */
function stepOf(field: string): number | null {
  const m = /^(?:\*|0)\/(\d+)$/.exec(field);
  return m?.[1] ? Number(m[1]) : null;
}

function plural(n: number, unit: string): string {
  return n === 1 ? `every ${unit}` : `every ${n} ${unit}s`;
}

/** describeEvery renders a Go duration such as "1h30m" from "@every 1h30m". */
function describeEvery(spec: string): string {
  return `every ${spec.trim()}`;
}

const RANGES: ReadonlyArray<readonly [number, number]> = [
  [0, 59], // second
  [0, 59], // minute
  [0, 23], // hour
  [1, 31], // day of month
  [1, 12], // month
  [0, 7], // day of week
];

/** inRange reports whether every plain number in each field lies within the field's range. */
function inRange(fields: readonly string[]): boolean {
  return fields.every((f, i) => {
    const [lo, hi] = RANGES[i] ?? [0, 59];
    return (f.match(/\d+/g) ?? []).every((n, j, all) => {
      // The step of "*/15" or "0-30/5" is not a value of the field.
      const isStep = f.includes('/') && j === all.length - 1;
      const v = Number(n);
      return isStep ? v > 0 : v >= lo && v <= hi;
    });
  });
}

/** describeFields handles the common shapes of a 6-field (seconds-first) expression. */
function describeFields(sec: string, min: string, hour: string, dom: string, mon: string, dow: string): string | null {
  if (mon !== '*') return null;
  const anyDom = dom === '*' || dom === '?';
  const anyDow = dow === '*' || dow === '?';

  // Sub-minute and minute steps.
  if (min === '*' && hour === '*' && anyDom && anyDow) {
    if (sec === '*') return 'every second';
    const s = stepOf(sec);
    if (s !== null) return plural(s, 'second');
    if (isNumber(sec)) return Number(sec) === 0 ? 'every minute' : `every minute at second ${Number(sec)}`;
    return null;
  }
  if (!isNumber(sec)) return null;
  const second = Number(sec);
  const secSuffix = second === 0 ? '' : ` at second ${second}`;

  if (hour === '*' && anyDom && anyDow) {
    const s = stepOf(min);
    if (s !== null) return plural(s, 'minute') + secSuffix;
    if (isNumber(min)) return `every hour at minute ${Number(min)}${secSuffix}`;
    return null;
  }
  const hourStep = stepOf(hour);
  if (hourStep !== null && isNumber(min) && anyDom && anyDow) {
    return `${plural(hourStep, 'hour')} at minute ${Number(min)}${secSuffix}`;
  }
  if (!isNumber(min)) return null;
  const minute = Number(min);
  const hours = hour.split(',');
  if (!hours.every(isNumber)) return null;
  const at = joinWords(hours.map((h) => clock(Number(h), minute, second)));

  if (anyDom && anyDow) return `every day at ${at}`;
  if (anyDom) {
    const days = describeDays(dow);
    return days === null ? null : `every ${days} at ${at}`;
  }
  if (anyDow && dom.split(',').every(isNumber)) {
    const doms = dom.split(',').map(Number);
    if (doms.length === 1 && doms[0] === 1) return `every month on day 1 at ${at}`;
    return `every month on day ${joinWords(doms.map(String))} at ${at}`;
  }
  return null;
}

function fallback(expr: string): string {
  try {
    const words = cronstrue.toString(expr, { use24HourTimeFormat: true, verbose: false, throwExceptionOnParseError: true });
    return words.charAt(0).toLowerCase() + words.slice(1);
  } catch {
    return `cron "${expr}"`;
  }
}

/**
 * describeSchedule says when a cron expression fires, without the time zone. It accepts 5
 * fields (minute first), 6 fields (seconds first, as Baton's scheduler reads them) and the
 * descriptors @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly and @every.
 * The empty string means the job only runs when started by hand.
 */
export function describeSchedule(cron: string): string {
  const expr = cron.trim().replace(/\s+/g, ' ');
  if (expr === '') return 'manual runs only';
  if (expr.startsWith('@')) {
    const lower = expr.toLowerCase();
    if (lower.startsWith('@every ')) return describeEvery(expr.slice('@every '.length));
    return DESCRIPTORS[lower] ?? `cron "${expr}"`;
  }
  const fields = expr.split(' ');
  let six: string[];
  if (fields.length === 5) six = ['0', ...fields];
  else if (fields.length === 6) six = fields;
  else return fallback(expr);
  if (!inRange(six)) return `cron "${expr}"`;
  const [sec = '', min = '', hour = '', dom = '', mon = '', dow = ''] = six;
  const ownWords = describeFields(sec, min, hour, dom, mon, dow);
  if (ownWords !== null) return ownWords;
  if (mon !== '*' && isNumber(mon) && isNumber(min) && isNumber(hour) && isNumber(dom) && (dow === '*' || dow === '?') && isNumber(sec)) {
    return `every year on ${Number(dom)} ${MONTH_NAMES[Number(mon) - 1] ?? `month ${mon}`} at ${clock(Number(hour), Number(min), Number(sec))}`;
  }
  return fallback(expr);
}

/** cronInWords is describeSchedule with the time zone: "every day at 04:00, Asia/Seoul". */
export function cronInWords(cron: string, timezone: string): string {
  const words = describeSchedule(cron);
  if (cron.trim() === '' || cron.trim().toLowerCase().startsWith('@every')) return words;
  return `${words}, ${timezone || 'UTC'}`;
}
