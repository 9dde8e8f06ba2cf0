/// The pipeline's consuming stages with the consumer group, input and dead-letter topics each uses
/// by default: what operator tools need to replay a stage or work on its dead letters.
public struct PipelineStageInfo: Sendable, Hashable {
    public var name: String
    public var groupID: String
    public var inputTopic: String
    public var outputTopic: String?
    public var deadLetterTopic: String

    public init(name: String, groupID: String, inputTopic: String, outputTopic: String?, deadLetterTopic: String) {
        self.name = name
        self.groupID = groupID
        self.inputTopic = inputTopic
        self.outputTopic = outputTopic
        self.deadLetterTopic = deadLetterTopic
    }
}

public enum PipelineStages {
    public static let verify = PipelineStageInfo(
        name: "verify", groupID: "appstore.verify", inputTopic: Topics.raw, outputTopic: Topics.verified,
        deadLetterTopic: Topics.verifyDeadLetters)
    public static let enrich = PipelineStageInfo(
        name: "enrich", groupID: "appstore.enrich", inputTopic: Topics.verified, outputTopic: Topics.enriched,
        deadLetterTopic: Topics.enrichDeadLetters)
    public static let grant = PipelineStageInfo(
        name: "grant", groupID: "appstore.grant", inputTopic: Topics.enriched, outputTopic: nil,
        deadLetterTopic: Topics.grantDeadLetters)

    /// Every consuming stage, in pipeline order.
    public static let all = [verify, enrich, grant]

    /// The stage called `name`, if there is one.
    public static func named(_ name: String) -> PipelineStageInfo? {
        all.first { $0.name == name }
    }
}
