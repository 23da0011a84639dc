/// The Wallet party's services.
enum TokenetWalletModule {}
