/// How verified certificate chains are reused across JWS.
///
/// Every JWS of a steady stream carries the same few `x5c` chains. Caching a verified chain, keyed by
/// the exact header bytes (which hold `alg` and the exact certificates), means a warm verifier only
/// checks the ES256 signature and the validity window per JWS. Off, every JWS pays for certificate
/// parsing and path validation (useful for benchmarks and for debugging).
public struct ChainCachePolicy: Hashable, Sendable {
    /// Whether chains are cached at all.
    public var isEnabled: Bool
    /// Most chains kept; the oldest is dropped first. Apple rotates signing leaves every year or two,
    /// so a handful suffices.
    public var maximumEntries: Int
    /// Seconds after which a chain is validated again from scratch (with online checks, the shorter
    /// of this and ``RevocationChecking/cacheLifetime`` applies).
    public var maximumAge: Double

    public init(isEnabled: Bool = true, maximumEntries: Int = 64, maximumAge: Double = 3600) {
        self.isEnabled = isEnabled
        self.maximumEntries = max(1, maximumEntries)
        self.maximumAge = maximumAge
    }

    /// Enabled, 64 chains, one hour.
    public static let `default` = ChainCachePolicy()
    /// No caching.
    public static let disabled = ChainCachePolicy(isEnabled: false)
}
