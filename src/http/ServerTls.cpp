#include "http/ServerTls.hpp"

#include <boost/asio/ssl/context.hpp>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <cstdio>
#include <cstring>
#include <string_view>

namespace sluice::http {

namespace {

namespace ssl = boost::asio::ssl;

std::string lastOpenSslError() {
  unsigned long e = 0;
  unsigned long last = 0;
  while ((e = ::ERR_get_error()) != 0) last = e;  // the last queued error is the most specific
  if (last == 0) return "unknown error";
  char buf[256];
  ::ERR_error_string_n(last, buf, sizeof buf);
  return buf;
}

// Readable as a file before OpenSSL sees it, so the message says "no such file" rather than
// an OpenSSL error code.
bool readable(const std::string& path, std::string& why) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    why = std::strerror(errno);
    return false;
  }
  std::fclose(f);
  return true;
}

// ALPN: this server speaks HTTP/1.1 only. A client that offers ALPN without it would
// otherwise speak a protocol we do not (h2) after the handshake: refuse it during the handshake.
int selectAlpn(SSL*, const unsigned char** out, unsigned char* outlen, const unsigned char* in, unsigned int inlen,
               void*) {
  static constexpr std::string_view kHttp11 = "http/1.1";
  unsigned int i = 0;
  while (i < inlen) {
    const unsigned int len = in[i];
    if (i + 1 + len > inlen) break;
    if (std::string_view(reinterpret_cast<const char*>(in + i + 1), len) == kHttp11) {
      *out = in + i + 1;
      *outlen = static_cast<unsigned char>(len);
      return SSL_TLSEXT_ERR_OK;
    }
    i += 1 + len;
  }
  return SSL_TLSEXT_ERR_ALERT_FATAL;
}

}  // namespace

std::shared_ptr<ServerTls::Context> ServerTls::load(const std::string& cert_file, const std::string& key_file,
                                                    std::string& error) {
  std::string why;
  if (!readable(cert_file, why)) {
    error = "cannot read the certificate " + cert_file + ": " + why;
    return nullptr;
  }
  if (!readable(key_file, why)) {
    error = "cannot read the private key " + key_file + ": " + why;
    return nullptr;
  }
  ::ERR_clear_error();
  auto ctx = std::make_shared<Context>(ssl::context::tls_server);
  SSL_CTX* native = ctx->native_handle();
  ::SSL_CTX_set_min_proto_version(native, TLS1_2_VERSION);
  ::SSL_CTX_set_options(native, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION | SSL_OP_CIPHER_SERVER_PREFERENCE);
  // OpenSSL keeps a read and a write buffer (about 17 KB each) per connection for its lifetime;
  // this frees them whenever they are empty, as they are between a stream's chunks.
  ::SSL_CTX_set_mode(native, SSL_MODE_RELEASE_BUFFERS);
  // An encrypted key must not make OpenSSL prompt on the terminal: it fails to load instead.
  ::SSL_CTX_set_default_passwd_cb(native, [](char*, int, int, void*) { return 0; });
  if (::SSL_CTX_use_certificate_chain_file(native, cert_file.c_str()) != 1) {
    error = "the certificate " + cert_file + " is not a PEM certificate chain: " + lastOpenSslError();
    return nullptr;
  }
  if (::SSL_CTX_use_PrivateKey_file(native, key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
    // OpenSSL checks the pair as it takes the key: tell a good key of another certificate
    // from a file that is no key at all.
    const unsigned long e = ::ERR_peek_last_error();
    if (ERR_GET_LIB(e) == ERR_LIB_X509 && ERR_GET_REASON(e) == X509_R_KEY_VALUES_MISMATCH) {
      ::ERR_clear_error();
      error = "the private key " + key_file + " does not match the certificate " + cert_file;
    } else {
      error = "the private key " + key_file + " is not an unencrypted PEM private key: " + lastOpenSslError();
    }
    return nullptr;
  }
  if (::SSL_CTX_check_private_key(native) != 1) {
    error = "the private key " + key_file + " does not match the certificate " + cert_file;
    ::ERR_clear_error();
    return nullptr;
  }
  ::SSL_CTX_set_alpn_select_cb(native, selectAlpn, nullptr);
  return ctx;
}

}  // namespace sluice::http
