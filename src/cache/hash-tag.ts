/**
 * The Redis Cluster hash tag of a cache key
 * (docs/decisions/0025-redis-cluster-one-hash-slot.md). Redis Cluster places a key by the
 * text between its first `{` and the next `}` when that text is not empty,
 * so the Redis cache store and RedisLock both write this in their keys and an
 * entry and its lock land in one slot, on one master.
 */
import { createHash } from 'node:crypto';

/**
 * `key` as a hash tag: `{key}` when it holds no brace; otherwise
 * `{md5(key)}key`, because a brace inside would end or empty the tag (a key
 * starting with `}` would give `{}`, which Redis ignores). The two forms never
 * coincide: the first holds exactly one `}`, the second at least two braces
 * after its tag.
 *
 * @param key - a cache key (`buffer:<md5>` or a `cacheKey` string)
 * @returns the text to append to a namespace
 *
 * @example
 * hashTagged('buffer:0cc175b9c0f1b6a831c399e269772661'); // '{buffer:0cc175b9c0f1b6a831c399e269772661}'
 * hashTagged('user:{42}'); // '{<md5 of user:{42}>}user:{42}'
 */
export function hashTagged(key: string): string {
  if (!key.includes('{') && !key.includes('}')) return `{${key}}`;
  return `{${createHash('md5').update(key, 'utf8').digest('hex')}}${key}`;
}
