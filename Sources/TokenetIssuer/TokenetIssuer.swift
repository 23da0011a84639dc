/// The Issuer party's services.
enum TokenetIssuerModule {}
