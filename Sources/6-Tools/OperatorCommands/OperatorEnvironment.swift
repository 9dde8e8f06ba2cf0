import ArgumentParser
import EnvironmentSettings
import Foundation
import KafkaClient
import Logging
import PipelineOperations
import PipelineRecords
import StageRuntime

/// What the broker-facing subcommands share: the broker settings from the same environment
/// variables the stages read, and the stage named on the command line.
enum OperatorEnvironment {
    static func kafkaClient() throws -> KafkaClientConfiguration {
        do {
            return try EnvironmentReader().kafkaClient(defaultClientID: "appstorectl")
        } catch {
            throw ValidationError("\(error.variable) \(error.problem)")
        }
    }

    /// The stage called `name`, with the topic and group names the environment overrides (``PipelineNames``).
    static func stage(_ name: String) throws -> PipelineStageInfo {
        guard let stage = PipelineNames.stage(name) else {
            throw ValidationError("--stage must be one of \(PipelineStages.all.map(\.name).joined(separator: ", ")) (got \(name))")
        }
        return stage
    }

    static var logger: Logger {
        var logger = Logger(label: "appstorectl")
        logger.logLevel = .warning
        return logger
    }

    /// Prints `value` as one line of JSON (``OperatorJSON``).
    static func printJSON<T: Encodable>(_ value: T) {
        do {
            print(try OperatorJSON.encode(value))
        } catch {
            fail(OperationsError(.jsonOutput, "the result cannot be written as JSON: \(error)"))
        }
    }

    /// Prints an operator error on standard error and exits 1.
    static func fail(_ error: any Error) -> Never {
        let text = (error as? OperationsError).map { "\($0.code): \($0.message)" } ?? "\(error)"
        FileHandle.standardError.write(Data("appstorectl: \(text)\n".utf8))
        Foundation.exit(1)
    }
}

extension String {
    /// Left-aligned in `width` columns.
    func padded(_ width: Int) -> String {
        count >= width ? self : self + String(repeating: " ", count: width - count)
    }
}
