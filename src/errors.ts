/**
 * The library's `Errors` namespace (src/index.ts): the domain's typed errors and the stores'
 * own, which live with the store (src/store/store-errors.ts).
 */
export * from "./domain/errors.ts"
export {
  IncompatibleStore,
  isLockFailure,
  LegacyLaunchNotifications,
  StoreFailure,
  StoreFailureReason
} from "./store/store-errors.ts"
