// The signed-in caller's role (GET /admin/api/me), for hiding what it cannot do. The gateway
// checks every call on its own; this only spares the user buttons that would answer 403.
import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import type { Me, Role } from './types';

const RANK: Record<Role, number> = { member: 0, viewer: 1, operator: 2, admin: 3 };

// An older gateway without /me: the master key was the only way in, so admin.
export const FULL: Me = { actor: 'master key', role: 'admin', kind: 'master_key' };
export const MeContext = createContext<Me>(FULL);

export function useMe(): Me {
  return useContext(MeContext);
}

export function atLeast(me: Me, role: Role): boolean {
  return RANK[me.role] >= RANK[role];
}
