import AppStore
import AppStoreSigning
import TestSupport
import VerifyService

extension TestPKI {
    /// The verify stage's configuration in these tests: the test app (by default in Sandbox and
    /// Production), the test root trusted.
    static func configuration(
        chainCache: ChainCachePolicy = .default, environments: Set<AppStoreEnvironment> = [.sandbox, .production]
    ) throws -> VerifyConfiguration {
        VerifyConfiguration(
            apps: [try AppStoreApp(bundleId: bundleId, appAppleId: appAppleId, environments: environments)],
            additionalTrustedRoots: [trusted.root], chainCache: chainCache)
    }
}
