// ServerTls: the edge's TLS identity (certificate chain and private key from PEM files) and the
// slot that hands the current one to each new connection. A reload builds a whole new context
// and swaps it in; connections already open keep the context they started with.
// Thread-safety: current() and replace() from any thread.
#pragma once
#include <memory>
#include <mutex>
#include <string>

namespace boost::asio::ssl {
class context;
}

namespace sluice::http {

class ServerTls {
 public:
  using Context = boost::asio::ssl::context;

  // Builds a server context from a PEM certificate chain (leaf first) and a PEM private key:
  // TLS 1.2 and 1.3 only, OpenSSL's default ciphers, ALPN http/1.1 (a client that offers ALPN
  // without it is refused), no renegotiation, no compression. Returns null and sets `error`
  // (what is wrong, naming the file) when a file cannot be read or the key does not match.
  static std::shared_ptr<Context> load(const std::string& cert_file, const std::string& key_file,
                                       std::string& error);

  explicit ServerTls(std::shared_ptr<Context> ctx) : ctx_(std::move(ctx)) {}

  std::shared_ptr<Context> current() const {
    std::lock_guard lock(mu_);
    return ctx_;
  }
  void replace(std::shared_ptr<Context> ctx) {
    std::lock_guard lock(mu_);
    ctx_.swap(ctx);
  }

 private:
  mutable std::mutex mu_;  // taken once per accepted connection: next to a handshake, free
  std::shared_ptr<Context> ctx_;
};

}  // namespace sluice::http
