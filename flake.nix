{
  description = "profnet, forum and microblog data API: development shell";
  # No flake.lock is committed yet: the first `nix develop` (or `nix flake lock`) writes one that pins
  # nixpkgs as of that day; commit it so that every shell gets the same PostgreSQL, Redis and wrk.
  inputs.nixpkgs.url = "github:NixOS/nixpkgs/nixos-unstable";
  outputs = { self, nixpkgs }:
    let
      systems = [ "x86_64-linux" "aarch64-linux" "x86_64-darwin" "aarch64-darwin" ];
      forAll = f: nixpkgs.lib.genAttrs systems (system: f nixpkgs.legacyPackages.${system});
    in {
      devShells = forAll (pkgs: {
        default = pkgs.mkShell {
          # Node runs npm; the scripts run the Node 22 that `npm install` pins in node_modules/.bin.
          packages = [ pkgs.nodejs_22 pkgs.postgresql_16 pkgs.redis pkgs.wrk ];
          shellHook = ''
            echo "PostgreSQL and Redis in .dev/: bash scripts/dev-services.sh start|stop|status"
          '';
        };
      });
    };
}
