import EnvironmentSettings
import Foundation
import KafkaClient

/// How the runtime sees any error: classified errors speak for themselves, Kafka errors are
/// transient when librdkafka says they are retriable, and anything else is permanent.
public struct FailureClassification: Sendable {
    /// The error's `<area>.<reason>` code (schemas/headers.md).
    public let code: String
    public let message: String
    public let isTransient: Bool
    public let retryAfter: Duration?

    public init(_ error: any Error) {
        switch error {
        case let e as any ClassifiedError:
            (code, message, isTransient, retryAfter) = (e.code.rawValue, e.message, e.isTransient, e.retryAfter)
        case let e as KafkaError:
            (code, message, isTransient, retryAfter) = (e.code.rawValue, e.reason, e.isRetriable || e.code == .closed, nil)
        case is DecodingError:
            (code, message, isTransient, retryAfter) = (
                StageError.Code.malformedRecord.rawValue, "the record could not be decoded: \(error)", false, nil
            )
        default:
            (code, message, isTransient, retryAfter) = (StageError.Code.unclassified.rawValue, String(describing: error), false, nil)
        }
    }
}
