/*
 * json-string.h - how the gpumem tool writes a string into its JSON output
 * (gpumem info --json, gpumem occupancy --json, gpumem bench --json, gpumem
 * trace).
 */
#ifndef GPUMEM_TOOLS_JSON_STRING_H
#define GPUMEM_TOOLS_JSON_STRING_H

/* Writes s to stdout as a JSON string literal: in double quotes, with '"'
 * and '\' escaped by a backslash and control characters (below 0x20) as
 * \u00XX; other bytes, UTF-8 included, as they are. */
void json_string(const char *s);

#endif /* GPUMEM_TOOLS_JSON_STRING_H */
