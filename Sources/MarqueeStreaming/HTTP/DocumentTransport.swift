import AsyncHTTPClient
import Foundation
import NIOCore
import NIOSSL

extension HTTPFetcher {
    /// Clients made for a CA file or for documents, by (CA file, whether redirects are
    /// followed): made once and kept for the process, as ``defaultClient`` is.
    private static let clients = Locked<[String: HTTPClient]>([:])

    /// A client like ``defaultClient`` that also trusts the certificates of the PEM file
    /// `caFile` (a venue's private CA; the system's roots still count), and follows redirects
    /// or, for documents (`followsRedirects` false), none: ``getDocument(_:allowHTTP:timeout:maxBytes:)``
    /// follows them by hand, checking each. An unreadable CA file is ``FetchError/Code-swift.struct/invalidURL``.
    package static func client(caFile: String?, followsRedirects: Bool) throws(FetchError) -> HTTPClient {
        if caFile == nil, followsRedirects { return defaultClient }
        let key = "\(followsRedirects ? "follow" : "manual")\u{0}\(caFile ?? "")"
        var roots: [NIOSSLCertificate] = []
        if let caFile {
            do {
                roots = try NIOSSLCertificate.fromPEMFile(caFile)
            } catch {
                throw FetchError(
                    .invalidURL, url: caFile, message: "CA file \(caFile): not a readable PEM file of certificates")
            }
            guard !roots.isEmpty else {
                throw FetchError(.invalidURL, url: caFile, message: "CA file \(caFile): no certificate in it")
            }
        }
        return clients.withLock { made in
            if let client = made[key] { return client }
            var configuration = HTTPClient.Configuration.singletonConfiguration
            configuration.timeout = .init(connect: .seconds(Int64(connectTimeout)), read: .seconds(Int64(idleTimeout)))
            configuration.redirectConfiguration =
                followsRedirects ? .follow(max: maxRedirects, allowCycles: false) : .disallow
            configuration.connectionPool.retryConnectionEstablishment = false
            if !roots.isEmpty {
                var tls = TLSConfiguration.makeClientConfiguration()
                tls.additionalTrustRoots = [.certificates(roots)]
                configuration.tlsConfiguration = tls
            }
            let client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
            made[key] = client
            return client
        }
    }

    /// A fetcher on ``client(caFile:followsRedirects:)``'s client.
    package init(caFile: String?, followsRedirects: Bool, headers: [(String, String)] = []) throws(FetchError) {
        self.init(client: try Self.client(caFile: caFile, followsRedirects: followsRedirects), headers: headers)
    }

    /// Why a document may not follow a redirect from `from` to `to` (nil: it may): never from
    /// https down to http (AsyncHTTPClient's own following allows it), and to http only with
    /// `allowHTTP`; only to http(s).
    package static func redirectRefusal(from: URL, to: URL, allowHTTP: Bool) -> String? {
        let (old, new) = (from.scheme?.lowercased() ?? "", to.scheme?.lowercased() ?? "")
        guard new == "http" || new == "https" else { return "a redirect to \(to.absoluteString): not an http(s) URL" }
        if old == "https" && new == "http" {
            return "a redirect from https down to http (\(to.absoluteString)) is not followed"
        }
        if new == "http" && !allowHTTP {
            return "a redirect to plain http (\(to.absoluteString)) is not followed without the http allowance"
        }
        return nil
    }

    /// A document (a config, a playlist, a schedule, a signature) fetched whole: over https
    /// unless `allowHTTP`, redirects followed by hand (at most ``maxRedirects``), each checked by
    /// ``redirectRefusal(from:to:allowHTTP:)``. A refused transport is
    /// ``FetchError/Code-swift.struct/insecure``. This fetcher's client should follow no redirect
    /// (``client(caFile:followsRedirects:)``); one that does still has its final URL checked.
    package func getDocument(_ url: URL, allowHTTP: Bool, timeout: Duration = .seconds(10), maxBytes: Int)
        async throws(FetchError) -> FetchResult
    {
        if url.scheme?.lowercased() == "http" && !allowHTTP {
            throw FetchError(
                .insecure, url: url.absoluteString,
                message: "plain http is not allowed for documents (https, or the http allowance)")
        }
        var at = url
        for _ in 0...Self.maxRedirects {
            do throws(FetchError) {
                let result = try await get(at, timeout: timeout, maxBytes: maxBytes)
                if let final = result.url, let refusal = Self.redirectRefusal(from: at, to: final, allowHTTP: allowHTTP)
                {
                    throw FetchError(.insecure, url: url.absoluteString, message: refusal)
                }
                var moved = result
                if at != url { moved.url = at }
                return moved
            } catch {
                guard error.code == .status, (300..<400).contains(error.status), error.status != 304,
                    let location = error.location,
                    let next = URL(string: location, relativeTo: at)?.absoluteURL
                else { throw error }
                if let refusal = Self.redirectRefusal(from: at, to: next, allowHTTP: allowHTTP) {
                    throw FetchError(.insecure, url: url.absoluteString, message: refusal)
                }
                at = next
            }
        }
        throw FetchError(.network, url: url.absoluteString, message: "more than \(Self.maxRedirects) redirects")
    }
}
