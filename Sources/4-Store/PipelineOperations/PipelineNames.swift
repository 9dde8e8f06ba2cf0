import Foundation
import PipelineRecords

/// The stages' topics and groups as a deployment named them: the defaults of ``PipelineStages``,
/// overridden per name by environment variables, so one `appstorectl` reaches a pipeline whose
/// topics or groups were renamed (a shared cluster, a test run):
///
/// | variable | overrides |
/// |---|---|
/// | `RAW_TOPIC`, `VERIFIED_TOPIC`, `ENRICHED_TOPIC` | the input topics of verify, enrich, grant |
/// | `VERIFY_DLQ_TOPIC`, `ENRICH_DLQ_TOPIC`, `GRANT_DLQ_TOPIC` | the dead-letter topics |
/// | `VERIFY_GROUP_ID`, `ENRICH_GROUP_ID`, `GRANT_GROUP_ID` | the consumer groups |
public enum PipelineNames {
    public static let variables = "RAW_TOPIC, VERIFIED_TOPIC, ENRICHED_TOPIC, <STAGE>_DLQ_TOPIC, <STAGE>_GROUP_ID"

    /// Every consuming stage, in pipeline order, with the environment's overrides.
    public static func stages(environment: [String: String] = ProcessInfo.processInfo.environment) -> [PipelineStageInfo] {
        PipelineStages.all.map { resolve($0, environment: environment) }
    }

    /// The stage called `name` with the environment's overrides.
    public static func stage(_ name: String, environment: [String: String] = ProcessInfo.processInfo.environment) -> PipelineStageInfo? {
        PipelineStages.named(name).map { resolve($0, environment: environment) }
    }

    static func resolve(_ stage: PipelineStageInfo, environment: [String: String]) -> PipelineStageInfo {
        func value(_ name: String) -> String? { environment[name].flatMap { $0.isEmpty ? nil : $0 } }
        let topicVariables = [Topics.raw: "RAW_TOPIC", Topics.verified: "VERIFIED_TOPIC", Topics.enriched: "ENRICHED_TOPIC"]
        var resolved = stage
        let prefix = stage.name.uppercased()
        if let name = topicVariables[stage.inputTopic], let topic = value(name) { resolved.inputTopic = topic }
        if let output = stage.outputTopic, let name = topicVariables[output], let topic = value(name) { resolved.outputTopic = topic }
        if let topic = value("\(prefix)_DLQ_TOPIC") { resolved.deadLetterTopic = topic }
        if let group = value("\(prefix)_GROUP_ID") { resolved.groupID = group }
        return resolved
    }
}
