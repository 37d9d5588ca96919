/*  drv_lua_lazy — a record as a lazy table (processor:lua `record: lazy`,
    docs/operations.md, "Lua"): the script gets an empty table whose
    metatable reads a field from the record where it lies when the script
    reads it, and keeps what the script sets or deletes in an overlay
    beside it. A record whose script touches few of its fields costs those
    fields, not a table of all of them; one it does not touch goes back as
    it came.

    What a script sees: type(r) is "table"; r.k, r.k = v and pairs(r) work
    as on a table (pairs: the record's fields in order, then the new ones);
    a nested map or list is a plain table, made when first read and part of
    the record from then on. next(r), rawget(r, k) and #r see nothing (the
    table itself holds nothing), getmetatable(r) is "record" and cannot be
    changed, and a record is usable only in the call it was given to: kept
    and used later, it raises an error naming why. */
#ifndef DRV_LUA_LAZY_H
#define DRV_LUA_LAZY_H

#include "drv_lua_record.h"

#include <stdbool.h>

typedef struct {
    const msgpack_object *record; // the record of the call under way (NULL: none)
    drv_lua_memo_t *memo;         // its strings, as read (the way back reuses them)
    //  Registry slots (integer keys: Lua finds them in the registry's array
    //  part, where a light-userdata key takes its generic lookup).
    int live_ref, dead_ref; // the metatables
    int table_ref;          // the call's lazy table, or false
    int overlay_ref;        // its overlay, or false
    //  Finding a field: the record's keys are scanned until the scans add up
    //  to a few times its size; then they are indexed (an open-addressing
    //  table of slots, hashed over every byte with a seed of the state's), so
    //  a script that touches every field of a huge record is not quadratic.
    uint64_t scanned; // keys compared in this call's scans
    bool indexed;     // the index is this call's record's
    uint32_t *slots;  // 1 + the pair's index; 0: empty
    size_t slot_count;
    uint64_t seed;
} drv_lua_lazy_t;

//  The metatables, once per state (lazy lives as long as the state).
void drv_lua_lazy_setup(lua_State *L, drv_lua_lazy_t *lazy);
//  What lazy holds outside the state (its index), after lua_close.
void drv_lua_lazy_fini(drv_lua_lazy_t *lazy);
//  Pushes record as a lazy table for the next call; the one before is
//  ended first.
void drv_lua_lazy_push(lua_State *L, drv_lua_lazy_t *lazy, const msgpack_object *record);
//  The call is over: its lazy table raises from now on.
void drv_lua_lazy_end(lua_State *L, drv_lua_lazy_t *lazy);
//  For the way back: when the value at index is the call's lazy table,
//  lazy (its record in lazy->record), with its overlay pushed (a table, or
//  nil when the script set nothing; the caller pops it). NULL, with nothing
//  pushed, for any other value; an ended lazy table raises.
drv_lua_lazy_t *drv_lua_lazy_parts(lua_State *L, int index);
//  The index of the call's record's pair whose key is the string at index,
//  or -1 (another type of key, or none).
int64_t drv_lua_lazy_field(drv_lua_lazy_t *lazy, lua_State *L, int index);
//  True when the value at index is the overlay's mark of a deleted field.
bool drv_lua_lazy_deleted(lua_State *L, int index);

#endif
