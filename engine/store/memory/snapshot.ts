// Memory adapters keep records as deeply frozen snapshots and replace them on every change, so
// a reader can be handed the stored snapshot itself (no deep copy per read) and cannot change it.
export function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}

/** A private, frozen copy of what a caller hands in. */
export const snapshot = <T>(value: T): T => deepFreeze(structuredClone(value));
