/*
 * mem_limit.h — how much memory this process may still take, so that a big model or a long
 * file is refused with a number before the allocations start instead of being killed by the
 * OOM killer half-way (Linux: /proc/meminfo MemAvailable and the cgroup memory limit).
 */
#ifndef WC_MEM_LIMIT_H
#define WC_MEM_LIMIT_H

#include <stddef.h>
#include <stdint.h>

/* Bytes available now: the smaller of MemAvailable and the cgroup's limit minus its usage
 * (cgroup v2 memory.max/current or v1 memory.limit_in_bytes/usage_in_bytes, less the inactive
 * page cache of memory.stat). Returns 0 and sets *bytes, or -1 when neither can be read (then
 * no check should be made). */
int mem_available(uint64_t *bytes);

/* The cgroup's part of that, from the cgroup file system mounted at root ("/sys/fs/cgroup");
 * -1 where it has no limit or none can be read. */
int mem_cgroup_available_at(const char *root, uint64_t *bytes);

/* The budget for a params field max_memory_bytes: > 0 is taken as is; 0 means
 * mem_available(); < 0 (or nothing readable) means no limit, UINT64_MAX. */
uint64_t mem_budget(int64_t max_memory_bytes);

/* 0 if `need` bytes fit `budget`; else writes "<what> needs about N MiB, but only M MiB of memory
 * is available (<source>)" to err and returns -1. */
int mem_check(uint64_t need, uint64_t budget, int64_t max_memory_bytes, const char *what, char *err,
              size_t err_size);

#endif /* WC_MEM_LIMIT_H */
