// Buttons and switches for mutations. Each names the role it needs; when the viewer's role is
// lower, or the state forbids the action, it is disabled and says why (tooltip on hover and
// keyboard focus). Every one carries data-mutation so tests can find them all.
import { Button, Switch, Tooltip, VisuallyHidden, type ButtonProps, type SwitchProps } from '@mantine/core';
import { useId, type ReactNode } from 'react';

import { useRoleReason } from '../auth/AuthContext';
import type { Role } from '../gql/graphql';

interface GuardProps {
  /** The role the mutation needs. */
  need: Role;
  /** Why the action is not possible in this state, or null. */
  blockedBy?: string | null | undefined;
}

function Reason({ reason, id, children }: { reason: string | null; id: string; children: ReactNode }) {
  if (!reason) return <>{children}</>;
  return (
    <Tooltip label={reason} multiline maw={320} withArrow events={{ hover: true, focus: true, touch: true }}>
      {/* A disabled button fires no pointer events and takes no focus: the wrapper carries the
          tooltip and the focus, and the button is described by the reason for screen readers. */}
      <span tabIndex={0} aria-label={reason} data-disabled-reason={reason} style={{ display: 'inline-block', cursor: 'not-allowed' }}>
        {children}
        <VisuallyHidden id={id}>{reason}</VisuallyHidden>
      </span>
    </Tooltip>
  );
}

export interface ActionButtonProps extends GuardProps, Omit<ButtonProps, 'disabled'> {
  onClick?: () => void;
  type?: 'button' | 'submit';
  'data-testid'?: string;
}

/** ActionButton is a Button for a mutation, disabled with a reason when it cannot run. */
export function ActionButton({ need, blockedBy, onClick, type = 'button', children, ...rest }: ActionButtonProps) {
  const roleReason = useRoleReason(need);
  const reason = roleReason ?? blockedBy ?? null;
  const id = useId();
  return (
    <Reason reason={reason} id={id}>
      <Button {...rest} type={type} disabled={reason !== null} onClick={onClick} aria-describedby={reason ? id : undefined} data-mutation>
        {children}
      </Button>
    </Reason>
  );
}

export interface ActionSwitchProps extends GuardProps, Omit<SwitchProps, 'disabled' | 'onChange'> {
  onChange: (checked: boolean) => void;
  'data-testid'?: string;
}

/** ActionSwitch is a Switch that runs a mutation, disabled with a reason when it cannot. */
export function ActionSwitch({ need, blockedBy, onChange, ...rest }: ActionSwitchProps) {
  const roleReason = useRoleReason(need);
  const reason = roleReason ?? blockedBy ?? null;
  const id = useId();
  return (
    <Reason reason={reason} id={id}>
      <Switch {...rest} aria-describedby={reason ? id : undefined} disabled={reason !== null} onChange={(e) => onChange(e.currentTarget.checked)} data-mutation />
    </Reason>
  );
}
