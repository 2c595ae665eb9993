// rank: see the package README.
export {};
