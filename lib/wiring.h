/*
 * wiring.h - the one place that connects the layers (private; top layer,
 * see doc/design.md).
 */
#ifndef GM_WIRING_H
#define GM_WIRING_H

/* Installs lib/wiring.c's tables: the context hooks (gm_context_set_hooks)
 * the pack-kernel provider of the copy engine (gm_pack_provider_set), and
 * the registrar of the process-lifetime hooks (gm_life_set_registrar).
 * It runs when the library loads, before any context can be made; calling
 * it again installs the same tables.  A program that links the internal
 * convenience library statically names it (-Wl,--undefined=gm_wiring_install)
 * so that its object, and through it every hook, is linked. */
void gm_wiring_install(void);

#endif /* GM_WIRING_H */
