/// Card data: numbers, schemes, encryption, tokens.
enum TokenetCardModule {}
