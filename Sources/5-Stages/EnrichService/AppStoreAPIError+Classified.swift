import AppStoreServerAPI
import ErrorClassification
import StageRuntime

/// The API client's errors already carry the runtime's classification (code, message, transient,
/// retry-after); the client stays free of the runtime so the operator tool can reuse it.
extension AppStoreAPIError: ClassifiedError {}
