/// `/time/...`: the clock endpoints.
extension OriginResponder {
    func time(_ components: [String], query: String?) -> Reply {
        var options = LiveOptions()
        var endpoint: String?
        for (i, component) in components.enumerated() {
            if i == components.count - 1 && !LiveOptions.looksLikeOption(Substring(component)) {
                endpoint = component
                break
            }
            do {
                try options.apply(Substring(component))
            } catch {
                return Reply(.badRequest, error.message)
            }
        }
        let clock = OriginClock(offset: options.timeOffset)
        let now = clock.now()
        switch endpoint ?? query ?? "xsdate" {
        case "xsdate", "iso": return Reply(.ok, OriginClock.xsDate(now), clock: clock).noNewline
        case "ms": return Reply(.ok, OriginClock.milliseconds(now), clock: clock).noNewline
        case "head": return Reply(.ok, clock: clock)
        case let other: return Reply(.notFound, "no time endpoint \"\(other)\" (xsdate, iso, ms, head)", clock: clock)
        }
    }
}
