import ErrorClassification
import StageRuntime

/// The dead-letter code for a raw record that is no notification envelope or app upload at all.
public enum MalformedRecord {
    /// `record.malformed`: the body is not JSON, or lacks `signedPayload` / `signedTransaction`.
    public static let code = StageError.Code.malformedRecord

    static func error(_ message: String) -> StageError {
        .permanent(code, message)
    }
}
