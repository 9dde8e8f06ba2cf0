import AppStore
import AsyncHTTPClient
import Foundation
import LogKeys
import Logging
import Metrics
import NIOCore
import NIOHTTP1
import Synchronization

/// The App Store Server API client.
///
/// Every request carries a fresh ES256 token for the app's key (``RequestToken``), goes to the host
/// of the environment the data came from (a Sandbox transaction is never looked up in Production),
/// waits its turn in the per-key ``RateLimiter``, and every JWS in the answer is verified with the
/// ``SignedDataVerifier`` (and must name the same app and environment) before it is returned.
/// Failures are ``AppStoreAPIError``s; the client never retries by itself, so the caller decides
/// (the enrich stage retries transient ones in place, in order).
public final class AppStoreServerAPIClient: Sendable {
    /// Where and how the client calls Apple.
    public struct Configuration: Sendable {
        /// One credential per app.
        public var credentials: [AppStoreAPICredentials]
        /// Replaces Apple's hosts for every environment (the simulator); `nil` means Apple's.
        public var baseURLOverride: String?
        /// Longest a request may take, connection included.
        public var requestTimeout: Duration
        /// Lifetime of each request token (Apple: at most 60 minutes; the libraries use 5).
        public var tokenLifetime: Duration
        /// The client-side rate limit.
        public var rateLimits: RateLimitPolicy
        /// Largest answer accepted, in bytes.
        public var maximumResponseBytes: Int

        public init(
            credentials: [AppStoreAPICredentials], baseURLOverride: String? = nil, requestTimeout: Duration = .seconds(15),
            tokenLifetime: Duration = .seconds(300), rateLimits: RateLimitPolicy = RateLimitPolicy(),
            maximumResponseBytes: Int = 8 << 20
        ) {
            self.credentials = credentials
            self.baseURLOverride = baseURLOverride
            self.requestTimeout = requestTimeout
            self.tokenLifetime = tokenLifetime
            self.rateLimits = rateLimits
            self.maximumResponseBytes = maximumResponseBytes
        }
    }

    /// The app and environment a call is about.
    public struct Target: Hashable, Sendable, CustomStringConvertible {
        public var bundleId: String
        public var environment: AppStoreEnvironment
        public init(bundleId: String, environment: AppStoreEnvironment) {
            self.bundleId = bundleId
            self.environment = environment
        }
        public var description: String { "\(bundleId)/\(environment.rawValue)" }
    }

    let configuration: Configuration
    let credentialsByBundleId: [String: AppStoreAPICredentials]
    let http: HTTPClient
    /// Verifies every JWS Apple returns.
    public let verifier: SignedDataVerifier
    /// The per-key limiter.
    public let rateLimiter: RateLimiter
    let logger: Logger
    let clock: @Sendable () -> Date
    private let sent = Atomic<Int>(0)
    private let signedTokens = Atomic<Int>(0)

    /// - Parameters:
    ///   - httpClient: The transport; the caller owns it and shuts it down.
    ///   - verifier: Configured with the apps (and, for the simulator, its root) the answers must match.
    /// - Throws: ``AppStoreAPIError`` `invalid_credentials` when no credential is given or a bundle ID repeats.
    public init(
        configuration: Configuration, httpClient: HTTPClient, verifier: SignedDataVerifier, logger: Logger,
        clock: @escaping @Sendable () -> Date = { Date() }
    ) throws(AppStoreAPIError) {
        guard !configuration.credentials.isEmpty else {
            throw AppStoreAPIError(.invalidCredentials, "the client needs credentials for at least one app")
        }
        var byBundle: [String: AppStoreAPICredentials] = [:]
        for credential in configuration.credentials {
            guard byBundle[credential.bundleId] == nil else {
                throw AppStoreAPIError(.invalidCredentials, "bundle ID \(credential.bundleId) has two credentials")
            }
            byBundle[credential.bundleId] = credential
        }
        self.configuration = configuration
        self.credentialsByBundleId = byBundle
        self.http = httpClient
        self.verifier = verifier
        self.rateLimiter = RateLimiter(policy: configuration.rateLimits)
        self.logger = logger
        self.clock = clock
        // Every endpoint's latency histogram exists at zero from the start, so that `rate()` sees
        // the first burst of calls (a series that appears with the burst in it shows no increase).
        for endpoint in AppStoreAPIEndpoint.allCases {
            _ = Timer(label: "appstore_api_request_duration_seconds", dimensions: [("endpoint", endpoint.name)], preferredDisplayUnit: .seconds)
        }
    }

    /// Requests sent so far (every page and every retry counts once).
    public var requestsSent: Int { sent.load(ordering: .relaxed) }

    /// Request tokens signed so far: one per request, as Apple says ("generate a new token for
    /// each request") and its four libraries do.
    public var tokensSigned: Int { signedTokens.load(ordering: .relaxed) }

    /// The bundle IDs the client holds credentials for.
    public var bundleIds: [String] { credentialsByBundleId.keys.sorted() }

    /// Whether this client can ask about `bundleId` in `environment`: it holds the app's key and
    /// its verifier accepts the app's data from that environment.
    public func serves(_ bundleId: String, in environment: AppStoreEnvironment) -> Bool {
        credentialsByBundleId[bundleId] != nil && verifier.accepts(bundleId, in: environment)
    }

    /// Throws ``AppStoreAPIError/Kind/budgetDeferred`` when a request of any of `endpoints` for
    /// `target` would be deferred now (``RateLimiter/checkRoom(keyID:bundleId:environment:endpoints:)``); spends nothing.
    public func checkRoom(for endpoints: [AppStoreAPIEndpoint], target: Target) throws(AppStoreAPIError) {
        guard let credentials = credentialsByBundleId[target.bundleId] else { return }
        do {
            try rateLimiter.checkRoom(keyID: credentials.keyID, bundleId: target.bundleId, environment: target.environment, endpoints: endpoints)
        } catch {
            throw Self.deferred(target, error)
        }
    }

    static func deferred(_ target: Target, _ deferral: RateLimiter.Deferral) -> AppStoreAPIError {
        let endpoint = deferral.endpoint
        Counter(label: "appstore_api_deferred_total", dimensions: [("endpoint", endpoint.name)]).increment()
        return AppStoreAPIError(
            .budgetDeferred,
            "\(endpoint.rawValue) for \(target) not sent: its budget has no room within the wait allowed; asked again in \(deferral.retryAfter)",
            retryAfter: deferral.retryAfter, endpoint: endpoint.rawValue)
    }

    /// Sends one request and returns the body of a 2xx answer.
    /// - Throws: ``AppStoreAPIError``.
    func send(
        _ endpoint: AppStoreAPIEndpoint, _ target: Target, method: HTTPMethod, path: String,
        query: [(String, String)] = [], body: [UInt8]? = nil
    ) async throws(AppStoreAPIError) -> [UInt8] {
        guard let credentials = credentialsByBundleId[target.bundleId] else {
            throw AppStoreAPIError(
                .invalidRequest, "no App Store Server API credentials for bundle ID \(target.bundleId)", endpoint: endpoint.rawValue)
        }
        let base: String
        if let override = configuration.baseURLOverride {
            base = override
        } else {
            base = try AppStoreAPIHost.baseURL(for: target.environment)
        }
        do {
            try await rateLimiter.acquire(
                keyID: credentials.keyID, bundleId: target.bundleId, environment: target.environment, endpoint: endpoint)
        } catch let deferral as RateLimiter.Deferral {
            throw Self.deferred(target, deferral)
        } catch {
            throw AppStoreAPIError(.unreachable, "cancelled while waiting for the rate limiter", endpoint: endpoint.rawValue)
        }
        var request = HTTPClientRequest(url: base + path + Self.queryString(query))
        request.method = method
        let token = try RequestToken.make(credentials: credentials, now: clock(), lifetime: configuration.tokenLifetime)
        signedTokens.add(1, ordering: .relaxed)
        request.headers.add(name: "Authorization", value: "Bearer \(token)")
        request.headers.add(name: "Accept", value: "application/json")
        request.headers.add(name: "User-Agent", value: "appstore-entitlements/1")
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: body))
        }
        sent.add(1, ordering: .relaxed)
        let started = ContinuousClock.now
        let status: Int
        let bytes: [UInt8]
        let retryAfter: String?
        do {
            let timeout = TimeAmount.nanoseconds(
                Int64(configuration.requestTimeout.components.seconds) * 1_000_000_000
                    + configuration.requestTimeout.components.attoseconds / 1_000_000_000)
            let response = try await http.execute(request, timeout: timeout, logger: logger)
            status = Int(response.status.code)
            retryAfter = response.headers.first(name: "Retry-After")
            var buffer = try await response.body.collect(upTo: configuration.maximumResponseBytes)
            bytes = buffer.readBytes(length: buffer.readableBytes) ?? []
        } catch {
            Counter(label: "appstore_api_requests_total", dimensions: [("endpoint", endpoint.name), ("outcome", "transport_error")]).increment()
            throw Self.transportError(error, endpoint: endpoint, target: target)
        }
        let elapsed = ContinuousClock.now - started
        Timer(label: "appstore_api_request_duration_seconds", dimensions: [("endpoint", endpoint.name)], preferredDisplayUnit: .seconds)
            .recordNanoseconds(elapsed.components.seconds * 1_000_000_000 + elapsed.components.attoseconds / 1_000_000_000)
        Counter(label: "appstore_api_requests_total", dimensions: [("endpoint", endpoint.name), ("outcome", "\(status)")]).increment()
        guard (200..<300).contains(status) else {
            let error = AppStoreAPIError.fromResponse(
                status: status, body: bytes, retryAfterHeader: retryAfter, endpoint: endpoint.rawValue, now: clock())
            if error.kind == .rateLimited {
                rateLimiter.holdOff(
                    keyID: credentials.keyID, bundleId: target.bundleId, environment: target.environment, endpoint: endpoint,
                    for: error.retryAfter ?? .seconds(1))
            }
            logger.debug(
                "App Store Server API error",
                metadata: [
                    LogKey.appStoreEndpoint: "\(endpoint.name)", LogKey.appStoreTarget: "\(target)", LogKey.httpStatus: "\(status)",
                    LogKey.appStoreErrorCode: "\(error.errorCode.map(String.init) ?? "-")",
                ])
            throw error
        }
        return bytes
    }

    /// Decodes a 2xx body.
    func decode<T: Decodable>(_ type: T.Type, _ bytes: [UInt8], endpoint: AppStoreAPIEndpoint) throws(AppStoreAPIError) -> T {
        do {
            return try AppStoreJSON.decode(T.self, from: bytes)
        } catch {
            throw AppStoreAPIError(
                .invalidResponse, "\(endpoint.rawValue) answered with a body that does not decode as \(T.self)", endpoint: endpoint.rawValue)
        }
    }

    /// Encodes a request body the way Apple expects (dates in milliseconds).
    func encode(_ value: some Encodable, endpoint: AppStoreAPIEndpoint) throws(AppStoreAPIError) -> [UInt8] {
        do {
            return Array(try AppStoreJSON.encoder.encode(value))
        } catch {
            throw AppStoreAPIError(.invalidRequest, "the request body of \(endpoint.rawValue) could not be encoded", endpoint: endpoint.rawValue)
        }
    }

    static func transportError(_ error: any Error, endpoint: AppStoreAPIEndpoint, target: Target) -> AppStoreAPIError {
        if let error = error as? HTTPClientError {
            let timeouts: [HTTPClientError] = [
                .readTimeout, .writeTimeout, .connectTimeout, .deadlineExceeded, .tlsHandshakeTimeout, .getConnectionFromPoolTimeout,
            ]
            if timeouts.contains(error) {
                return AppStoreAPIError(.timeout, "\(endpoint.rawValue) for \(target) timed out (\(error))", endpoint: endpoint.rawValue)
            }
        }
        if error is CancellationError {
            return AppStoreAPIError(.unreachable, "\(endpoint.rawValue) for \(target) was cancelled", endpoint: endpoint.rawValue)
        }
        return AppStoreAPIError(
            .unreachable, "\(endpoint.rawValue) for \(target) failed: \(String(describing: error).prefix(200))", endpoint: endpoint.rawValue)
    }

    static func queryString(_ items: [(String, String)]) -> String {
        guard !items.isEmpty else { return "" }
        var allowed = CharacterSet.urlQueryAllowed
        allowed.remove(charactersIn: "&=+?")
        return "?"
            + items.map { name, value in
                "\(name)=\(value.addingPercentEncoding(withAllowedCharacters: allowed) ?? value)"
            }.joined(separator: "&")
    }

    /// A path segment with anything outside URL path characters escaped (IDs come from data).
    static func segment(_ value: String) -> String {
        var allowed = CharacterSet.urlPathAllowed
        allowed.remove(charactersIn: "/?#")
        return value.addingPercentEncoding(withAllowedCharacters: allowed) ?? value
    }
}
