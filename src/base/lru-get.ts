/**
 * The options every hot-path `LRUCache.get` passes. lru-cache defaults them
 * to a new object per call (and writes its diagnostics `status` into it), so
 * each cache hit allocated throwaway objects; one shared object, whose
 * `status` it overwrites on every call, spares that.
 */
export const plainGet = {};
