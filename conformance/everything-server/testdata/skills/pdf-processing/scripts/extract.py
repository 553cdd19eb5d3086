"""Prints the text of every page of a PDF file (a sample script of the skill)."""
import sys

def main(path):
    print(f"would extract the text of {path}")

if __name__ == "__main__":
    main(sys.argv[1])
