import AppStore
import Testing

/// Expects `body` to throw an ``AppStoreVerificationError`` with `code`.
func expectRejection<T>(
    _ code: AppStoreVerificationError.Code,
    sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () async throws -> T
) async {
    do {
        _ = try await body()
        Issue.record("expected rejection with \(code) but the input was accepted", sourceLocation: sourceLocation)
    } catch let error as AppStoreVerificationError {
        #expect(error.code == code, "got \(error)", sourceLocation: sourceLocation)
    } catch {
        Issue.record("expected AppStoreVerificationError \(code), got \(error)", sourceLocation: sourceLocation)
    }
}
