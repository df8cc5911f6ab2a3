/**
 * Custom message types this package sends into Pi sessions: a public contract (renderers,
 * branch scans and users' tools key on them). Dependency-free so any module can import it.
 */
export const DEFERRED_TURN_TYPE = "pi-workflows-deferred-turn"
