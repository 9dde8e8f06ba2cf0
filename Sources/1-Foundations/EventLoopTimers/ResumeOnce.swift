import Synchronization

/// A continuation that the first of several racers resumes: an answer and its deadline, a close and
/// its timeout, a sleep and its cancellation. A later racer finds it decided and does nothing.
///
/// The one resume-once primitive of the project. It may be decided before its continuation is
/// armed (a cancellation handler can run before the continuation exists): arming then resumes at
/// once. A timer attached to it is cancelled when it is decided, so a deadline that lost the race
/// never fires.
public final class ResumeOnce<Value: Sendable, Failure: Error>: Sendable {
    private enum State {
        case waiting(timer: EventLoopTimer?)
        case armed(CheckedContinuation<Value, Failure>, timer: EventLoopTimer?)
        /// Decided before the continuation was armed: the outcome it will get.
        case decidedEarly(Result<Value, Failure>)
        case decided
    }
    private let state: Mutex<State>

    /// Not armed yet: ``arm(_:)`` gives it the continuation.
    public init() { state = Mutex(.waiting(timer: nil)) }

    /// Armed with `continuation`.
    public init(_ continuation: CheckedContinuation<Value, Failure>) { state = Mutex(.armed(continuation, timer: nil)) }

    /// Gives the continuation; resumes it at once if a racer already decided. Returns whether it is
    /// still waiting for a racer.
    @discardableResult
    public func arm(_ continuation: CheckedContinuation<Value, Failure>) -> Bool {
        let early = state.withLock { s -> Result<Value, Failure>? in
            switch s {
            case .waiting(let timer):
                s = .armed(continuation, timer: timer)
                return nil
            case .decidedEarly(let outcome):
                s = .decided
                return outcome
            case .armed, .decided:
                preconditionFailure("a ResumeOnce is armed once")
            }
        }
        guard let early else { return true }
        continuation.resume(with: early)
        return false
    }

    /// Keeps `timer` to cancel when decided; cancels it now if already decided.
    public func attach(_ timer: EventLoopTimer) {
        let kept = state.withLock { s -> Bool in
            switch s {
            case .waiting: s = .waiting(timer: timer)
            case .armed(let c, _): s = .armed(c, timer: timer)
            case .decidedEarly, .decided: return false
            }
            return true
        }
        if !kept { timer.cancel() }
    }

    /// Resumes with `outcome` if no racer did before; returns whether this call decided.
    @discardableResult
    public func resume(with outcome: Result<Value, Failure>) -> Bool {
        let (continuation, timer, decided) = state.withLock { s -> (CheckedContinuation<Value, Failure>?, EventLoopTimer?, Bool) in
            switch s {
            case .waiting(let timer):
                s = .decidedEarly(outcome)
                return (nil, timer, true)
            case .armed(let c, let timer):
                s = .decided
                return (c, timer, true)
            case .decidedEarly, .decided:
                return (nil, nil, false)
            }
        }
        timer?.cancel()
        continuation?.resume(with: outcome)
        return decided
    }
}

extension ResumeOnce {
    @discardableResult
    public func resume(returning value: Value) -> Bool { resume(with: .success(value)) }

    @discardableResult
    public func resume(throwing error: Failure) -> Bool { resume(with: .failure(error)) }
}

extension ResumeOnce where Value == Void {
    @discardableResult
    public func resume() -> Bool { resume(with: .success(())) }
}
