// The audit log: every mutation, who asked, and what came of it.
import { graphql } from '../gql';

export const AuditLogQuery = graphql(`
  query AuditLog($filter: AuditFilter, $first: Int, $after: String) {
    auditLog(filter: $filter, first: $first, after: $after) {
      nodes {
        id
        actor
        action
        target
        arguments
        truncated
        outcome
        createdAt
      }
      pageInfo {
        hasNextPage
        endCursor
      }
    }
  }
`);

/** The audit log's filters, as the page's URL holds them. */
export interface AuditFilters {
  actor: string;
  action: string;
  target: string;
  outcome: string;
  since: string;
  until: string;
}

export const AUDIT_FILTER_KEYS: readonly (keyof AuditFilters)[] = ['actor', 'action', 'target', 'outcome', 'since', 'until'];

/** auditFiltersFrom reads the filters from URL search parameters. */
export function auditFiltersFrom(params: URLSearchParams): AuditFilters {
  const get = (k: string): string => params.get(k)?.trim() ?? '';
  return { actor: get('actor'), action: get('action'), target: get('target'), outcome: get('outcome'), since: get('since'), until: get('until') };
}

/**
 * auditFilterInput turns the page's filters into the query's AuditFilter: empty fields left
 * out, times (datetime-local values, in the viewer's zone) sent as RFC 3339. An unreadable
 * time is an error for that field.
 */
export function auditFilterInput(f: AuditFilters): { filter: Record<string, string>; errors: Partial<Record<keyof AuditFilters, string>> } {
  const filter: Record<string, string> = {};
  const errors: Partial<Record<keyof AuditFilters, string>> = {};
  for (const k of ['actor', 'action', 'target', 'outcome'] as const) {
    if (f[k]) filter[k] = f[k];
  }
  for (const k of ['since', 'until'] as const) {
    if (!f[k]) continue;
    const t = Date.parse(f[k]);
    if (Number.isNaN(t)) errors[k] = 'Not a date and time';
    else filter[k] = new Date(t).toISOString();
  }
  return { filter, errors };
}

/** A console link for what an audit entry acted on, or null when it has no page. */
export interface AuditLink {
  to: string;
  label: string;
}

/**
 * auditTargetLink links an audit target (job:<name>, run:<id>, replay:<id>, ledger:<id>,
 * alert:<id>, downstream:<name>, cluster) to its page (a ledger entry has none yet). runPathFor builds a run's URL
 * from its number.
 */
export function auditTargetLink(target: string, runPathFor: (n: string) => string): AuditLink | null {
  const i = target.indexOf(':');
  if (i < 0) return null;
  const kind = target.slice(0, i);
  const rest = target.slice(i + 1);
  if (!rest) return null;
  switch (kind) {
    case 'job':
      return { to: `/admin/jobs/${encodeURIComponent(rest)}`, label: `job ${rest}` };
    case 'run':
      return /^\d+$/.test(rest) ? { to: runPathFor(rest), label: `run #${rest}` } : null;
    case 'replay':
      return /^\d+$/.test(rest) ? { to: '/admin/replays', label: `replay request #${rest}` } : null;
    case 'alert':
      return { to: '/admin/alerts', label: 'alerts' };
    case 'downstream':
      return { to: '/admin/downstreams', label: `downstream ${rest}` };
  }
  return null;
}
