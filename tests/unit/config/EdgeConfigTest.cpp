// The edge's config: server.tls (files loaded and checked at load time) and admin.listen.
#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "config/Config.hpp"
#include "http/ServerTls.hpp"

namespace sluice::config {
namespace {
namespace edge_config_test {

namespace fs = std::filesystem;

// A self-signed P-256 certificate and its key, written as PEM files into a fresh directory.
class TempIdentity {
 public:
  TempIdentity() {
    dir_ = fs::temp_directory_path() / ("sluice-edge-" + std::to_string(::getpid()) + "-" + std::to_string(counter()++));
    fs::create_directories(dir_);
  }
  ~TempIdentity() {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  TempIdentity(const TempIdentity&) = delete;
  TempIdentity& operator=(const TempIdentity&) = delete;

  // Writes NAME.pem and NAME.key; returns their paths.
  std::pair<std::string, std::string> issue(const std::string& name) {
    std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key(EVP_EC_gen("P-256"), EVP_PKEY_free);
    std::unique_ptr<X509, decltype(&X509_free)> cert(X509_new(), X509_free);
    X509_set_version(cert.get(), 2);
    ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), counter()++);
    X509_gmtime_adj(X509_getm_notBefore(cert.get()), 0);
    X509_gmtime_adj(X509_getm_notAfter(cert.get()), 3600);
    X509_set_pubkey(cert.get(), key.get());
    X509_NAME* subject = X509_get_subject_name(cert.get());
    X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(name.c_str()), -1,
                               -1, 0);
    X509_set_issuer_name(cert.get(), subject);
    X509_sign(cert.get(), key.get(), EVP_sha256());
    const std::string certPath = (dir_ / (name + ".pem")).string();
    const std::string keyPath = (dir_ / (name + ".key")).string();
    std::FILE* f = std::fopen(certPath.c_str(), "w");
    PEM_write_X509(f, cert.get());
    std::fclose(f);
    f = std::fopen(keyPath.c_str(), "w");
    PEM_write_PrivateKey(f, key.get(), nullptr, nullptr, 0, nullptr, nullptr);
    std::fclose(f);
    return {certPath, keyPath};
  }

  std::string write(const std::string& name, const std::string& text) {
    const std::string p = (dir_ / name).string();
    std::ofstream(p) << text;
    return p;
  }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }

 private:
  static int& counter() {
    static int n = 1;
    return n;
  }
  fs::path dir_;
};

std::shared_ptr<const Config> parse(const std::string& yaml) { return parseConfig(yaml, "t.yaml"); }

std::string failure(const std::string& yaml, int* line = nullptr) {
  try {
    parse(yaml);
  } catch (const ConfigError& e) {
    if (line != nullptr) *line = e.line();
    return e.what();
  }
  ADD_FAILURE() << "expected a ConfigError for:\n" << yaml;
  return {};
}

std::string tlsYaml(const std::string& cert, const std::string& key) {
  return "server:\n  listen: \"127.0.0.1:8443\"\n  tls:\n    cert: \"" + cert + "\"\n    key: \"" + key + "\"\n";
}

TEST(EdgeConfig, ServerTlsLoadsAMatchingPair) {
  TempIdentity id;
  auto [cert, key] = id.issue("edge");
  auto cfg = parse(tlsYaml(cert, key));
  EXPECT_TRUE(cfg->server.tls.enabled());
  EXPECT_EQ(cfg->server.tls.cert, cert);
  EXPECT_EQ(cfg->server.tls.key, key);
  std::string error;
  EXPECT_NE(http::ServerTls::load(cert, key, error), nullptr) << error;
}

TEST(EdgeConfig, ServerTlsIsOffByDefault) {
  auto cfg = parse("server:\n  listen: \"127.0.0.1:8080\"\n");
  EXPECT_FALSE(cfg->server.tls.enabled());
  EXPECT_TRUE(cfg->admin.listen.empty());
}

TEST(EdgeConfig, ServerTlsAcceptsAChainFile) {
  TempIdentity id;
  auto [cert, key] = id.issue("leaf");
  auto [other, otherKey] = id.issue("intermediate");
  std::ifstream a(cert), b(other);
  std::string chain((std::istreambuf_iterator<char>(a)), {});
  chain.append(std::istreambuf_iterator<char>(b), {});
  const std::string chainPath = id.write("chain.pem", chain);
  EXPECT_TRUE(parse(tlsYaml(chainPath, key))->server.tls.enabled());
}

TEST(EdgeConfig, ServerTlsMissingFileNamesItWithTheLine) {
  TempIdentity id;
  auto [cert, key] = id.issue("edge");
  int line = 0;
  const std::string missing = id.path("missing.pem");
  const std::string msg = failure(tlsYaml(missing, key), &line);
  EXPECT_NE(msg.find("t.yaml:4:"), std::string::npos) << msg;
  EXPECT_EQ(line, 4);
  EXPECT_NE(msg.find("server.tls: cannot read the certificate " + missing), std::string::npos) << msg;
  EXPECT_NE(msg.find("No such file"), std::string::npos) << msg;
  const std::string noKey = failure(tlsYaml(cert, id.path("missing.key")));
  EXPECT_NE(noKey.find("cannot read the private key"), std::string::npos) << noKey;
}

TEST(EdgeConfig, ServerTlsKeyOfAnotherCertificateIsRefused) {
  TempIdentity id;
  auto [cert, key] = id.issue("one");
  auto [cert2, key2] = id.issue("two");
  const std::string msg = failure(tlsYaml(cert, key2));
  EXPECT_NE(msg.find("server.tls: the private key " + key2 + " does not match the certificate " + cert),
            std::string::npos)
      << msg;
}

TEST(EdgeConfig, ServerTlsNotPemIsRefused) {
  TempIdentity id;
  auto [cert, key] = id.issue("edge");
  const std::string junk = id.write("junk.pem", "hello\n");
  EXPECT_NE(failure(tlsYaml(junk, key)).find("is not a PEM certificate chain"), std::string::npos);
  EXPECT_NE(failure(tlsYaml(cert, junk)).find("is not an unencrypted PEM private key"), std::string::npos);
}

TEST(EdgeConfig, ServerTlsNeedsBothFilesAndKnownKeys) {
  EXPECT_NE(failure("server:\n  tls:\n    cert: \"a.pem\"\n").find("server.tls: key is missing"), std::string::npos);
  EXPECT_NE(failure("server:\n  tls:\n    key: \"a.key\"\n").find("server.tls: cert is missing"), std::string::npos);
  EXPECT_NE(failure("server:\n  tls:\n").find("server.tls: expected a mapping"), std::string::npos);
  int line = 0;
  const std::string msg = failure("server:\n  tls:\n    cert: a\n    key: b\n    chain: c\n", &line);
  EXPECT_NE(msg.find("unknown key \"chain\" in server.tls"), std::string::npos) << msg;
  EXPECT_EQ(line, 5);
}

TEST(EdgeConfig, AdminListenParses) {
  auto cfg = parse("admin:\n  listen: \"127.0.0.1:9091\"\n");
  EXPECT_EQ(cfg->admin.listen, "127.0.0.1:9091");
  EXPECT_TRUE(parse("admin:\n")->admin.listen.empty());
}

TEST(EdgeConfig, AdminListenMustBeHostPort) {
  int line = 0;
  const std::string msg = failure("server:\n  listen: \"127.0.0.1:8080\"\nadmin:\n  listen: \"9091\"\n", &line);
  EXPECT_NE(msg.find("admin.listen: expected host:port"), std::string::npos) << msg;
  EXPECT_EQ(line, 4);
  EXPECT_NE(failure("admin:\n  address: \"127.0.0.1:9091\"\n").find("unknown key \"address\" in admin"),
            std::string::npos);
}

TEST(EdgeConfig, AdminListenMustNotOverlapServerListen) {
  // Either order of the sections: the check runs once both are known.
  for (const std::string& yaml : {std::string("server:\n  listen: \"127.0.0.1:8080\"\nadmin:\n  listen: \"127.0.0.1:8080\"\n"),
                                 std::string("admin:\n  listen: \"0.0.0.0:8080\"\nserver:\n  listen: \"127.0.0.1:8080\"\n")}) {
    const std::string msg = failure(yaml);
    EXPECT_NE(msg.find("overlaps server.listen"), std::string::npos) << msg;
  }
  // Another port, or the same port on another address, or both picked by the system: fine.
  EXPECT_NO_THROW(parse("server:\n  listen: \"127.0.0.1:8080\"\nadmin:\n  listen: \"127.0.0.1:9091\"\n"));
  EXPECT_NO_THROW(parse("server:\n  listen: \"10.0.0.5:8080\"\nadmin:\n  listen: \"127.0.0.1:8080\"\n"));
  EXPECT_NO_THROW(parse("server:\n  listen: \"127.0.0.1:0\"\nadmin:\n  listen: \"127.0.0.1:0\"\n"));
}

TEST(EdgeConfig, DescribeConfigShowsTlsFilesAndAdminListen) {
  TempIdentity id;
  auto [cert, key] = id.issue("edge");
  auto cfg = parse(tlsYaml(cert, key) + "admin:\n  listen: \"127.0.0.1:9091\"\n");
  const std::string y = describeConfig(*cfg);
  EXPECT_NE(y.find("cert: \"" + cert + "\""), std::string::npos) << y;
  EXPECT_NE(y.find("listen: \"127.0.0.1:9091\""), std::string::npos) << y;
  // The description parses back to the same settings.
  auto again = parse(y);
  EXPECT_EQ(again->server.tls, cfg->server.tls);
  EXPECT_EQ(again->admin.listen, cfg->admin.listen);
}

}  // namespace edge_config_test
}  // namespace
}  // namespace sluice::config
