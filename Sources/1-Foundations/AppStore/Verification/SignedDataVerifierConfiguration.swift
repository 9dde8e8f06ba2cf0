import Foundation
import X509

extension SignedDataVerifier {
    /// When certificates must be valid.
    public enum ValidationTime: Hashable, Sendable {
        /// At the payload's `signedDate` (`receiptCreationDate` for app transactions), or now when
        /// absent: what Apple's libraries do offline, and what replaying stored data needs, because
        /// Apple's signing leaves expire after about two years.
        case signedDate
        /// At the current time.
        case currentTime
        /// At one fixed time (tests, investigations).
        case fixed(Date)
    }

    /// Everything a ``SignedDataVerifier`` enforces.
    ///
    /// The defaults are the safe ones: only Apple Root CA - G3 trusted, validation at `signedDate`,
    /// no network, chains cached, inputs capped at 1 MiB.
    public struct Configuration: Sendable {
        /// The apps accepted, by bundle ID; at least one.
        public var apps: [AppStoreApp]
        /// Roots trusted besides Apple's (a local test CA, the simulator's). Never accepted for
        /// Production data, whatever is configured here.
        public var additionalTrustedRoots: [Certificate]
        /// Whether the embedded Apple Root CA - G3 is trusted (turn off only in tests).
        public var trustsAppleRootCAG3: Bool
        /// When certificates must be valid; with ``revocationChecking`` on, `.signedDate` becomes the
        /// current time, as OCSP answers are about now.
        public var validationTime: ValidationTime
        /// OCSP checks of leaf and intermediate; `nil` (the default) means offline.
        public var revocationChecking: RevocationChecking?
        /// Reuse of verified chains.
        public var chainCache: ChainCachePolicy
        /// Reuse of whole verified tokens (off by default; the API client turns it on).
        public var verifiedTokenCache: VerifiedTokenCachePolicy
        /// Largest accepted compact JWS in bytes; larger input is `malformed` before any parsing.
        public var maximumInputSize: Int
        /// The clock; injectable so cache ageing and "now" are testable.
        public var clock: @Sendable () -> Date

        public init(
            apps: [AppStoreApp],
            additionalTrustedRoots: [Certificate] = [],
            trustsAppleRootCAG3: Bool = true,
            validationTime: ValidationTime = .signedDate,
            revocationChecking: RevocationChecking? = nil,
            chainCache: ChainCachePolicy = .default,
            verifiedTokenCache: VerifiedTokenCachePolicy = .disabled,
            maximumInputSize: Int = 1 << 20,
            clock: @escaping @Sendable () -> Date = { Date() }
        ) {
            self.apps = apps
            self.additionalTrustedRoots = additionalTrustedRoots
            self.trustsAppleRootCAG3 = trustsAppleRootCAG3
            self.validationTime = validationTime
            self.revocationChecking = revocationChecking
            self.chainCache = chainCache
            self.verifiedTokenCache = verifiedTokenCache
            self.maximumInputSize = maximumInputSize
            self.clock = clock
        }
    }
}
